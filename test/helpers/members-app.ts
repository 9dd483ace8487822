// Shared by members*.test.ts: one app and PostHog's refusals of member changes.
import t from 'tap';
import { buildTestApp } from './app.js';

export const ME = { uuid: '@me' };
export const ctx = await buildTestApp(t);
export const { call, db } = ctx;

export const denied = (detail: string) => ({
  type: 'authentication_error',
  code: 'permission_denied',
  detail,
  attr: null,
});
export const notFound = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };
export const EDIT_OTHERS = 'You can only edit others if you are an admin.';
export const HIGHER_TARGET = 'You can only edit others with level lower or equal to you.';
export const OWN_LEVEL = "You can't change your own access level.";
export const MAKE_OWNER = "You can only make another member owner if you're this organization's owner.";
export const OWNER_LEAVES = {
  type: 'validation_error',
  code: 'invalid_input',
  detail: 'Cannot leave the organization as its owner!',
  attr: null,
};
