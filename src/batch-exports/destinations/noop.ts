import type { DestinationWriter } from './types.js';

/** Reads every record and sends nothing: for trying a schedule, or measuring the read side. */
export function noopWriter(): DestinationWriter {
  let bytes = 0;
  return {
    get bytes() {
      return bytes;
    },
    async write(batch) {
      for (const line of batch.lines) bytes += Buffer.byteLength(line) + 1;
    },
    async finish() {},
    async abort() {},
  };
}
