// Shared by organizations*.test.ts: one app.
import t from 'tap';
import { buildTestApp } from './app.js';

export const ME = { uuid: '@me' };
export const ctx = await buildTestApp(t);
export const { call, db } = ctx;
