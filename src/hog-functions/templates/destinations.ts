import { template } from './types.js';

const debugInput = {
  key: 'debug',
  type: 'boolean',
  label: 'Log responses',
  description: 'Logs the response of http calls for debugging.',
  secret: false,
  required: false,
  default: false,
};

/** PostHog's `template-webhook`: the same inputs, and the same request built from them. */
export const webhook = template({
  id: 'template-webhook',
  name: 'HTTP Webhook',
  description: 'Sends a webhook templated by the incoming event data',
  type: 'destination',
  icon_url: '/static/posthog-icon.svg',
  category: ['Custom'],
  code: `
let payload := {
  'headers': inputs.headers,
  'body': inputs.body,
  'method': inputs.method
}

if (inputs.debug) {
  print('Request', inputs.url, payload)
}

let res := fetch(inputs.url, payload);

if (inputs.debug) {
  print('Response', res.status, res.body);
}
`,
  inputs_schema: [
    { key: 'url', type: 'string', label: 'Webhook URL', secret: false, required: true },
    {
      key: 'method',
      type: 'choice',
      label: 'Method',
      choices: ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'].map((m) => ({ label: m, value: m })),
      default: 'POST',
      required: false,
    },
    {
      key: 'body',
      type: 'json',
      label: 'JSON Body',
      default: { event: '{event}', person: '{person}' },
      secret: false,
      required: false,
    },
    {
      key: 'headers',
      type: 'dictionary',
      label: 'Headers',
      secret: false,
      required: false,
      default: { 'Content-Type': 'application/json' },
    },
    debugInput,
  ],
});

/** A JSON POST with headers and an optional bearer token kept secret. */
export const httpJson = template({
  id: 'template-http-json-post',
  name: 'HTTP JSON POST',
  description: 'POSTs a JSON body built from the event to any URL, with headers and an optional bearer token',
  type: 'destination',
  icon_url: '/static/posthog-icon.svg',
  category: ['Custom'],
  code: `
let headers := inputs.headers ?? {}
headers['Content-Type'] := 'application/json'
if (notEmpty(inputs.token)) {
  headers['Authorization'] := f'Bearer {inputs.token}'
}
let res := fetch(inputs.url, {'method': 'POST', 'headers': headers, 'body': inputs.body})
if (res.status >= 400) {
  throw Error(f'HTTP {res.status} from the endpoint')
}
`,
  inputs_schema: [
    { key: 'url', type: 'string', label: 'URL', secret: false, required: true },
    {
      key: 'body',
      type: 'json',
      label: 'JSON body',
      default: { event: '{event.event}', distinct_id: '{event.distinct_id}', properties: '{event.properties}' },
      secret: false,
      required: true,
    },
    { key: 'headers', type: 'dictionary', label: 'Headers', secret: false, required: false, default: {} },
    { key: 'token', type: 'string', label: 'Bearer token', secret: true, required: false },
  ],
});

/** A Slack incoming webhook (the URL is the secret). */
export const slack = template({
  id: 'template-slack-webhook',
  name: 'Slack (incoming webhook)',
  description: 'Posts a message to a Slack channel through an incoming webhook',
  type: 'destination',
  icon_url: '/static/services/slack.png',
  category: ['Customer Success'],
  code: `
let res := fetch(inputs.webhook_url, {
  'method': 'POST',
  'headers': {'Content-Type': 'application/json'},
  'body': {'text': inputs.text}
})
if (res.status >= 400) {
  throw Error(f'Slack answered {res.status}: {res.body}')
}
`,
  inputs_schema: [
    { key: 'webhook_url', type: 'string', label: 'Incoming webhook URL', secret: true, required: true },
    {
      key: 'text',
      type: 'string',
      label: 'Message',
      default: '*{person.name}* triggered event: *{event.event}*',
      secret: false,
      required: true,
    },
  ],
});

/** A Discord webhook (the URL is the secret). */
export const discord = template({
  id: 'template-discord-webhook',
  name: 'Discord (webhook)',
  description: 'Posts a message to a Discord channel through a webhook',
  type: 'destination',
  icon_url: '/static/services/discord.png',
  category: ['Customer Success'],
  code: `
let res := fetch(inputs.webhook_url, {
  'method': 'POST',
  'headers': {'Content-Type': 'application/json'},
  'body': {'content': inputs.content}
})
if (res.status >= 400) {
  throw Error(f'Discord answered {res.status}: {res.body}')
}
`,
  inputs_schema: [
    { key: 'webhook_url', type: 'string', label: 'Webhook URL', secret: true, required: true },
    {
      key: 'content',
      type: 'string',
      label: 'Content',
      default: '**{person.name}** triggered event: **{event.event}**',
      secret: false,
      required: true,
    },
  ],
});
