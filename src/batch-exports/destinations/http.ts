import { guardedFetch, NetworkPolicyError } from '../../net/index.js';
import { jsonTexts } from '../records.js';
import { NonRetryableError, type DestinationContext, type DestinationWriter } from './types.js';

const MAX_EVENTS = 500;
const MAX_BYTES = 5 * 1024 * 1024;
const TIMEOUT_MS = 30_000;

interface ExportedEvent {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  timestamp: string;
  elements_chain?: string;
}

/** PostHog's capture shape of one exported event; the receiving server keeps `uuid`, so a resend is deduplicated. */
function captureEvent(line: string): { event: object; size: number } {
  const e = JSON.parse(line) as ExportedEvent;
  const properties = { ...(e.properties ?? {}) };
  if (e.elements_chain) properties.$elements_chain = e.elements_chain;
  const event = { uuid: e.uuid, event: e.event, distinct_id: e.distinct_id, properties, timestamp: e.timestamp };
  return { event, size: line.length };
}

/**
 * POSTs the events in batches to `url` as `{api_key, historical_migration, batch}`, the body PostHog's
 * `/batch/` endpoint takes, so one server can export into another. 5xx, 429 and network failures are
 * retried with the run; any other refusal fails the run.
 */
export function httpWriter({ exp, network }: DestinationContext): DestinationWriter {
  const { url, token } = exp.destination_config as { url: string; token: string };
  let bytes = 0;

  async function post(batch: object[]): Promise<void> {
    const body = JSON.stringify({ api_key: token, historical_migration: true, batch });
    let res: Response;
    try {
      res = await guardedFetch(network.policy, url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      if (err instanceof NetworkPolicyError) throw new NonRetryableError(err.message);
      throw new Error(`Could not reach ${new URL(url).origin}.`);
    }
    await res.arrayBuffer().catch(() => undefined);
    if (res.status >= 500 || res.status === 429) throw new Error(`The HTTP destination answered ${res.status}`);
    if (res.status >= 400) throw new NonRetryableError(`The HTTP destination refused the batch: ${res.status}`);
    bytes += Buffer.byteLength(body);
  }

  return {
    get bytes() {
      return bytes;
    },
    async write(batch) {
      let pending: object[] = [];
      let size = 0;
      for (const line of jsonTexts(batch)) {
        const { event, size: n } = captureEvent(line);
        if (pending.length && (pending.length >= MAX_EVENTS || size + n > MAX_BYTES)) {
          await post(pending);
          pending = [];
          size = 0;
        }
        pending.push(event);
        size += n;
      }
      if (pending.length) await post(pending);
    },
    async finish() {},
    async abort() {},
  };
}
