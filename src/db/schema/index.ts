export * from './organizations.js';
export * from './projects.js';
export * from './users.js';
export * from './events.js';
export * from './dashboards.js';
export * from './people.js';
export * from './plugins.js';
export * from './event-definitions.js';
