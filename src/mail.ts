import { createRequire } from 'node:module';
import type { Transporter } from 'nodemailer';
import type { Config } from './config.js';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** E-mail is on when an SMTP host is configured (EMAIL_HOST). */
export function mailConfigured(config: Config): boolean {
  return Boolean(config.emailHost);
}

// One transport per configuration, so every request does not renegotiate its settings.
const transports = new WeakMap<Config, Transporter>();

// nodemailer holds several MB once loaded and is used only when e-mail is configured and sent: loaded then.
const load = createRequire(import.meta.url);

function transportFor(config: Config): Transporter {
  let transport = transports.get(config);
  if (!transport) {
    const { createTransport } = load('nodemailer') as typeof import('nodemailer');
    transport = createTransport({
      host: config.emailHost,
      port: config.emailPort,
      secure: config.emailUseSsl,
      requireTLS: config.emailUseTls,
      ...(config.emailUser ? { auth: { user: config.emailUser, pass: config.emailPassword ?? '' } } : {}),
      // Sending runs after the answer, but a dead server should still be given up on in seconds.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
    transports.set(config, transport);
  }
  return transport;
}

/**
 * The sign-up link of an invite. Its base is SITE_URL, else the address the server is configured to
 * listen on: never a request's Host header, which the caller chooses and could point at a server of
 * their own to collect the invite id.
 */
export function signupLink(config: Pick<Config, 'siteUrl' | 'host' | 'port'>, inviteId: string): string {
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const base = (config.siteUrl ?? `http://${host}:${config.port}`).replace(/\/+$/, '');
  return `${base}/signup/${inviteId}`;
}

export async function sendMail(config: Config, mail: OutgoingMail): Promise<void> {
  await transportFor(config).sendMail({ from: config.emailFrom, ...mail });
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The invitation: who invites, to which organization, the personal note, and the sign-up link. */
export function inviteMail(input: {
  to: string;
  firstName: string;
  organizationName: string;
  inviterName: string | null;
  message: string | null;
  link: string;
  validDays: number;
}): OutgoingMail {
  const inviter = input.inviterName || 'Someone';
  const subject = `${inviter} invited you to join ${input.organizationName}`;
  const greeting = input.firstName ? `Hi ${input.firstName},` : 'Hi,';
  const lines = [
    greeting,
    '',
    `${inviter} invited you to join ${input.organizationName}.`,
    ...(input.message ? ['', `Their message: ${input.message}`] : []),
    '',
    `Accept the invite here: ${input.link}`,
    '',
    `The invite is valid for ${input.validDays} days.`,
  ];
  const html = [
    `<p>${escapeHtml(greeting)}</p>`,
    `<p>${escapeHtml(inviter)} invited you to join <strong>${escapeHtml(input.organizationName)}</strong>.</p>`,
    ...(input.message ? [`<blockquote>${escapeHtml(input.message)}</blockquote>`] : []),
    `<p><a href="${escapeHtml(input.link)}">Accept the invite</a></p>`,
    `<p>The invite is valid for ${input.validDays} days.</p>`,
  ].join('\n');
  return { to: input.to, subject, text: lines.join('\n'), html };
}
