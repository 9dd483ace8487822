/**
 * The last resort against an error that nothing handled (a stream or socket without an `error`
 * listener, a promise nobody awaited): it is logged and the process keeps serving, so that no input
 * can take the server down for everyone. Every such log line is a bug to fix where it arose.
 * close-with-grace must be told to leave these two events alone, or it would shut down on them.
 */
export const GUARDED_EVENTS = ['uncaughtException', 'unhandledRejection'] as const;

export function guardProcess(log: (msg: string, err: unknown) => void): void {
  process.on('uncaughtException', (err) => log('uncaught exception; still serving', err));
  process.on('unhandledRejection', (reason) => log('unhandled promise rejection; still serving', reason));
}
