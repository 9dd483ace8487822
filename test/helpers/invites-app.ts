// Shared by invites*.test.ts: one app mailing through a local SMTP server, PostHog's refusals, fresh addresses.
import t from 'tap';
import { buildTestApp } from './app.js';
import { startSmtp } from './smtp.js';

export const SITE = 'https://analytics.example.org';
export const smtp = await startSmtp(t, { auth: { user: 'mailer', password: 's3cret' } });
export const ctx = await buildTestApp(t, {
  emailHost: '127.0.0.1',
  emailPort: smtp.port,
  emailUser: 'mailer',
  emailPassword: 's3cret',
  emailFrom: 'invites@example.org',
  siteUrl: SITE,
});
export const { call, db } = ctx;

export const denied = (detail: string) => ({
  type: 'authentication_error',
  code: 'permission_denied',
  detail,
  attr: null,
});
export const missingScope = (scope: string) => denied(`API key missing required scope '${scope}'`);
export const LEVEL_DENIED = denied('Your organization access level is insufficient.');
export const HIGHER_INVITE = denied('You cannot invite a user with a higher permission level than your own.');
export const ALREADY_MEMBER = {
  type: 'validation_error',
  code: 'invalid_input',
  detail: 'A user with this email address already belongs to the organization.',
  attr: null,
};
export const TEAM_MISSING =
  'Team does not exist on this organization, or it is private and you do not have access to it.';
export let n = 0;
export const email = (stem = 'invitee') => `${stem}-${process.pid}-${++n}@example.com`;

/** Mail for `to` among the messages received so far. */
export const mailTo = (to: string) => smtp.messages.filter((m) => m.rcptTo.includes(to));
