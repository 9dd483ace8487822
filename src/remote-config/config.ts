import type { RemoteConfigProject } from './queries.js';

/**
 * The remote config posthog-js loads before it starts autocapture, as PostHog builds it
 * (`RemoteConfig.build_config`) for a project with no feature flags, recordings, surveys, site apps
 * or error tracking, none of which exist here. Autocapture and heatmaps follow the project.
 */
export function remoteConfig(p: RemoteConfigProject) {
  return {
    token: p.api_token,
    supportedCompression: ['gzip', 'gzip-js'],
    hasFeatureFlags: false,
    captureDeadClicks: false,
    capturePerformance: false as const,
    autocapture_opt_out: Boolean(p.autocapture_opt_out),
    autocaptureExceptions: false,
    analytics: { endpoint: '/i/v0/e/' },
    elementsChainAsString: true,
    errorTracking: { autocaptureExceptions: false, suppressionRules: [] as unknown[] },
    sessionRecording: false as const,
    heatmaps: Boolean(p.heatmaps_opt_in),
    surveys: false,
    defaultIdentifiedOnly: true,
    siteApps: [] as Record<string, unknown>[],
  };
}

/** `config.js`: the script that hands the config to posthog-js, with the (absent) site apps. */
export function remoteConfigScript(p: RemoteConfigProject): string {
  const { siteApps: _siteApps, ...config } = remoteConfig(p);
  return `(function() {
  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};
  window._POSTHOG_REMOTE_CONFIG[${JSON.stringify(p.api_token)}] = {
    config: ${JSON.stringify(config)},
    siteApps: []
  }
})();`;
}

/**
 * The config fields `/decide/` (and `/flags/` with `config=true`) add to their answer, as PostHog's
 * flags service words them: the remote config plus the legacy `config`, toolbar and session keys.
 */
export function decideConfig(p: RemoteConfigProject) {
  const { token: _token, hasFeatureFlags: _flags, ...config } = remoteConfig(p);
  return {
    ...config,
    config: { enable_collect_everything: true },
    toolbarParams: {},
    isAuthenticated: false,
    flagsPersistenceDefault: false,
  };
}
