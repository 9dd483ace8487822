/** A Hog program or expression that does not parse or compile; start/end are offsets in its source. */
export class HogCompileError extends Error {
  constructor(
    message: string,
    readonly start?: number,
    readonly end?: number,
  ) {
    super(message);
    this.name = 'HogCompileError';
  }
}
