export * from './organizations.js';
export * from './projects.js';
export * from './users.js';
export * from './events.js';
export * from './batch-exports.js';
