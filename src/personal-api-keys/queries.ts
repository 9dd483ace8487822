import { and, desc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { personal_api_keys } from '../db/schema/index.js';
import { hashKeyValue, maskKeyValue, newPersonalApiKeyValue, randomToken } from '../tokens.js';

export type PersonalApiKeyRow = typeof personal_api_keys.$inferSelect;
export type PersonalApiKeyInput = Pick<PersonalApiKeyRow, 'label' | 'scopes'> &
  Partial<Pick<PersonalApiKeyRow, 'scoped_teams' | 'scoped_organizations'>>;

export const MAX_KEYS_PER_USER = 10;

export async function listKeys(db: Db, userId: number): Promise<PersonalApiKeyRow[]> {
  return db
    .select()
    .from(personal_api_keys)
    .where(eq(personal_api_keys.user_id, userId))
    .orderBy(desc(personal_api_keys.created_at), desc(personal_api_keys.id));
}

export async function countKeys(db: Db, userId: number): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(personal_api_keys)
    .where(eq(personal_api_keys.user_id, userId));
  return row?.n ?? 0;
}

export async function getKey(db: Db, userId: number, id: string): Promise<PersonalApiKeyRow | undefined> {
  const [row] = await db
    .select()
    .from(personal_api_keys)
    .where(and(eq(personal_api_keys.user_id, userId), eq(personal_api_keys.id, id)))
    .limit(1);
  return row;
}

/** Creates a key and returns it with its value, which is stored only as a hash. */
export async function createKey(
  db: Db,
  userId: number,
  input: PersonalApiKeyInput,
  value = newPersonalApiKeyValue(),
): Promise<{ row: PersonalApiKeyRow; value: string }> {
  const [row] = await db
    .insert(personal_api_keys)
    .values({
      ...input,
      id: randomToken(24),
      user_id: userId,
      secure_value: hashKeyValue(value),
      mask_value: maskKeyValue(value),
    })
    .returning();
  return { row: row!, value };
}

/**
 * Runs `change` on one of the user's keys in a transaction that holds the key's row locked, so the
 * key `change` judges is the key it changes. Undefined when the user has no such key.
 */
export async function withOwnKeyLocked<T>(
  db: Db,
  userId: number,
  id: string,
  change: (key: PersonalApiKeyRow, tx: Db) => Promise<T>,
): Promise<T | undefined> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .select()
      .from(personal_api_keys)
      .where(and(eq(personal_api_keys.user_id, userId), eq(personal_api_keys.id, id)))
      .for('update')
      .limit(1);
    return row ? change(row, tx) : undefined;
  });
}

export async function updateKey(
  db: Db,
  userId: number,
  id: string,
  input: Partial<PersonalApiKeyInput>,
): Promise<PersonalApiKeyRow | undefined> {
  if (!Object.keys(input).length) return getKey(db, userId, id);
  const [row] = await db
    .update(personal_api_keys)
    .set(input)
    .where(and(eq(personal_api_keys.user_id, userId), eq(personal_api_keys.id, id)))
    .returning();
  return row;
}

export async function rollKey(
  db: Db,
  userId: number,
  id: string,
): Promise<{ row: PersonalApiKeyRow; value: string } | undefined> {
  const value = newPersonalApiKeyValue();
  const [row] = await db
    .update(personal_api_keys)
    .set({ secure_value: hashKeyValue(value), mask_value: maskKeyValue(value), last_rolled_at: sql`now()` })
    .where(and(eq(personal_api_keys.user_id, userId), eq(personal_api_keys.id, id)))
    .returning();
  return row && { row, value };
}

export async function deleteKey(db: Db, userId: number, id: string): Promise<boolean> {
  const rows = await db
    .delete(personal_api_keys)
    .where(and(eq(personal_api_keys.user_id, userId), eq(personal_api_keys.id, id)))
    .returning({ id: personal_api_keys.id });
  return rows.length > 0;
}
