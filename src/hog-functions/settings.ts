import type { Config } from '../config.js';

/** Seconds before a failed delivery's second attempt; the third waits about twice as long (pg-boss back-off). */
export const deliveryRetryDelay = (config: Pick<Config, 'hogRetryDelaySeconds'>) => config.hogRetryDelaySeconds;
