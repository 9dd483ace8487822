/** PostHog's invocation globals (HogFunctionInvocationGlobals) and filter globals, built from one event. */
import { filterGlobals as hogFilterGlobals } from '../hog/filters.js';

type Json = Record<string, unknown>;

export interface EventInput {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Json;
  timestamp: string;
  elements_chain: string;
}

export interface PersonInput {
  id: string;
  properties: Json;
}

export interface ProjectInput {
  id: number;
  name: string;
}

export function invocationGlobals(
  siteUrl: string,
  project: ProjectInput,
  event: EventInput,
  person: PersonInput | null,
  fn: { id: string; name: string | null },
): Json {
  const projectUrl = `${siteUrl}/project/${project.id}`;
  return {
    project: { id: project.id, name: project.name, url: projectUrl },
    event: {
      uuid: event.uuid,
      event: event.event,
      distinct_id: event.distinct_id,
      properties: event.properties,
      elements_chain: event.elements_chain,
      timestamp: event.timestamp,
      url: `${projectUrl}/events/${encodeURIComponent(event.uuid)}/${encodeURIComponent(event.timestamp)}`,
    },
    person: person
      ? {
          id: person.id,
          properties: person.properties,
          name: String(person.properties.email ?? person.properties.name ?? event.distinct_id),
          url: `${projectUrl}/person/${encodeURIComponent(event.distinct_id)}`,
        }
      : null,
    groups: {},
    source: { name: fn.name ?? '', url: `${projectUrl}/pipeline/destinations/hog-${fn.id}/configuration/` },
  };
}

/** What filters read: PostHog's convert_to_hog_function_filter_globals (src/hog builds it as its plugin server). */
export function filterGlobals(event: EventInput, person: PersonInput | null): Json {
  return hogFilterGlobals(event, person);
}
