import type { FastifyRequest } from 'fastify';
import { spec, specYaml } from './spec.js';

/**
 * Where this server is, as its clients reach it: `SITE_URL` when set, else the request's own scheme
 * and host (as pagination's links do). The contract and /docs name it in `servers`, so "Try it out"
 * and SDKs generated from /api/schema/ call this server, not the repository's neutral default.
 */
export function serverUrl(req: FastifyRequest): string {
  const site = req.server.config.siteUrl;
  if (site) return site;
  try {
    return new URL(`${req.protocol}://${req.host}`).origin;
  } catch {
    // A Host header no URL can carry: the document stays relative to where it was fetched from.
    return '/';
  }
}

export function serversOf(req: FastifyRequest) {
  return [{ url: serverUrl(req), description: 'This server.' }];
}

// The contract rendered once with a placeholder server, which each answer swaps for its own: no
// per-request rendering, and nothing a client's Host header could make the server keep.
const PLACEHOLDER = 'https://placeholder.invalid';
const withPlaceholder = { ...spec, servers: [{ url: PLACEHOLDER, description: 'This server.' }] };
const jsonTemplate = JSON.stringify(withPlaceholder);
let yamlTemplate: string | undefined;

/** The contract as JSON text with this server in `servers`. */
export function specJsonFor(req: FastifyRequest): string {
  return jsonTemplate.replace(JSON.stringify(PLACEHOLDER), JSON.stringify(serverUrl(req)));
}

/** The contract as YAML with this server in `servers` (a JSON string is a YAML double-quoted scalar). */
export function specYamlFor(req: FastifyRequest): string {
  yamlTemplate ??= specYaml(withPlaceholder);
  return yamlTemplate.replace(PLACEHOLDER, JSON.stringify(serverUrl(req)));
}
