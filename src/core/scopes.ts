/** `write` implies `read`, and `*` allows everything. */
export function hasScope(keyScopes: readonly string[], required: string): boolean {
  if (keyScopes.includes('*') || keyScopes.includes(required)) return true;
  const [object, action] = required.split(':');
  return action === 'read' && keyScopes.includes(`${object}:write`);
}
