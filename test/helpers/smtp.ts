import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface TestSmtp {
  port: number;
  /** Parsed messages in arrival order, with the envelope recipients and the authenticated user. */
  messages: { mail: ParsedMail; rcptTo: string[]; user: string | undefined }[];
  /** Resolves once `n` messages have arrived (fails after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<TestSmtp['messages']>;
}

/**
 * A real SMTP server on 127.0.0.1 (port 0), closed with the test. Its bundled STARTTLS certificate has
 * expired, so STARTTLS is off. With `auth`, it accepts only that user and password; with
 * `greetingDelayMs`, it greets each connection only after that long (a slow server).
 */
export async function startSmtp(
  t: Test,
  { auth, greetingDelayMs = 0 }: { auth?: { user: string; password: string }; greetingDelayMs?: number } = {},
): Promise<TestSmtp> {
  const messages: TestSmtp['messages'] = [];
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    disabledCommands: auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    allowInsecureAuth: true,
    authOptional: !auth,
    logger: false,
    onConnect(_session, cb) {
      setTimeout(() => cb(), greetingDelayMs);
    },
    onAuth(a, _session, cb) {
      if (auth && a.username === auth.user && a.password === auth.password) cb(null, { user: a.username });
      else cb(new Error('Invalid username or password'));
    },
    onData(stream, session, cb) {
      simpleParser(stream).then(
        (mail) => {
          messages.push({
            mail,
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            user: session.user as string | undefined,
          });
          for (const wake of waiters.splice(0)) wake();
          cb();
        },
        (err: Error) => cb(err),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.server.address() as AddressInfo).port;

  async function waitFor(n: number, timeoutMs = 10_000) {
    const deadline = Date.now() + timeoutMs;
    while (messages.length < n) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${n} e-mails, got ${messages.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return messages;
  }
  return { port, messages, waitFor };
}
