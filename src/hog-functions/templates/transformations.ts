import { template } from './types.js';

export const setProperties = template({
  id: 'template-set-properties',
  name: 'Set event properties',
  description: 'Sets (or overwrites) properties on every matching event',
  type: 'transformation',
  icon_url: '/static/hedgehog/builder-hog-01.png',
  category: ['Custom'],
  code: `
let returnEvent := event
let props := returnEvent.properties ?? {}
for (let key, value in inputs.properties) {
  props[key] := value
}
returnEvent.properties := props
return returnEvent
`,
  inputs_schema: [
    { key: 'properties', type: 'dictionary', label: 'Properties to set', required: true, secret: false, default: {} },
  ],
});

export const removeProperties = template({
  id: 'template-remove-properties',
  name: 'Remove event properties',
  description: 'Removes the named properties (a comma-separated list) from every matching event',
  type: 'transformation',
  icon_url: '/static/hedgehog/builder-hog-01.png',
  category: ['Custom'],
  code: `
let remove := []
for (let name in splitByString(',', inputs.properties)) {
  remove := arrayPushBack(remove, trim(name))
}
let props := {}
for (let key, value in event.properties) {
  if (not has(remove, key)) {
    props[key] := value
  }
}
let returnEvent := event
returnEvent.properties := props
return returnEvent
`,
  inputs_schema: [
    {
      key: 'properties',
      type: 'string',
      label: 'Properties to remove',
      description: 'Comma-separated property names',
      required: true,
      secret: false,
    },
  ],
});

export const dropEvents = template({
  id: 'template-drop-events',
  name: 'Drop events',
  description: 'Drops every event matching the filters before it is stored',
  type: 'transformation',
  icon_url: '/static/hedgehog/builder-hog-01.png',
  category: ['Custom'],
  code: `
return null
`,
  inputs_schema: [],
  filters: { events: [{ id: '$pageleave', type: 'events', name: '$pageleave' }] },
});

export const hashProperties = template({
  id: 'template-hash-properties',
  name: 'Hash properties (PII)',
  description: 'Replaces the named properties with their salted SHA-256, so personal data is never stored',
  type: 'transformation',
  icon_url: '/static/hedgehog/builder-hog-01.png',
  category: ['Custom'],
  code: `
let names := []
for (let name in splitByString(',', inputs.properties)) {
  names := arrayPushBack(names, trim(name))
}
let props := event.properties
for (let key, value in props) {
  if (has(names, key) and value != null) {
    props[key] := sha256Hex(concat(toString(value), inputs.salt ?? ''))
  }
}
let returnEvent := event
returnEvent.properties := props
return returnEvent
`,
  inputs_schema: [
    {
      key: 'properties',
      type: 'string',
      label: 'Properties to hash',
      description: 'Comma-separated property names',
      required: true,
      secret: false,
      default: '$email',
    },
    { key: 'salt', type: 'string', label: 'Salt', required: false, secret: true },
  ],
});
