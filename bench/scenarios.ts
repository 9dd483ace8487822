// What `make bench` measures. Each scenario names the API request and, where it reads the database,
// the baseline route in bench/baseline.ts that runs the same SQL directly.
export interface Seeded {
  organizationId: string;
  projectId: number;
  databaseUrl?: string | undefined;
  base: string;
  key: string;
}

export interface Scenario {
  id: string;
  name: string;
  backends?: ('embedded' | 'postgresql')[];
  request(s: Seeded): { path: string; method?: string; body?: string; headers?: Record<string, string>; requests?: unknown[] };
  baselineSql?(s: Seeded): string;
}

export const scenarios: Scenario[] = [
  {
    id: 'organization',
    name: 'organization retrieve',
    request: (s) => ({ path: `/api/organizations/${s.organizationId}/` }),
    baselineSql: (s) => `/sql/organization/${s.organizationId}`,
  },
  {
    id: 'projects',
    name: 'projects list (21)',
    request: () => ({ path: '/api/projects/' }),
    baselineSql: () => '/sql/projects',
  },
];
