// What the domains test files share: the error bodies and a domain name no other test uses.
export const levelDenied = {
  type: 'authentication_error',
  code: 'permission_denied',
  detail: 'Your organization access level is insufficient.',
  attr: null,
};
export const missingScope = (scope: string) => ({
  type: 'authentication_error',
  code: 'permission_denied',
  detail: `API key missing required scope '${scope}'`,
  attr: null,
});

let n = 0;
export const uniqueDomain = (stem = 'example') => `${stem}-${process.pid}-${++n}.com`;
