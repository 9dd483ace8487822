import { jsonLines } from '../records.js';
import type { DestinationWriter } from './types.js';

/** Reads every record and sends nothing: for trying a schedule, or measuring the read side. */
export function noopWriter(): DestinationWriter {
  let bytes = 0;
  return {
    get bytes() {
      return bytes;
    },
    async write(batch) {
      bytes += jsonLines(batch).length;
    },
    async finish() {},
    async abort() {},
  };
}
