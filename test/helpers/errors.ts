// The UserError a refusal must be: tests then assert its message, fix and exit code.
import { expect } from "vitest";
import { UserError } from "../../cli/errors";

/** The UserError `p` rejects with (the test fails when it resolves or rejects with anything else). */
export async function userErrorOf(p: Promise<unknown>): Promise<UserError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(UserError);
  return e as UserError;
}

/** The UserError `fn` throws (the test fails when it returns or throws anything else). */
export function userErrorFrom(fn: () => unknown): UserError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    return e as UserError;
  }
  throw new Error("expected a UserError");
}
