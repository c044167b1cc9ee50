// What the client needs to know of a procedure to call it well (generated from the catalog).

import { PROCEDURES, type ProcedureName } from "./generated/procedures.js";

/** Call facts of one procedure, from the catalog (`idempotent`, `clientTimeoutSeconds` …). */
export interface ProcedureInfo {
  readonly name: string;
  readonly summary: string;
  /** Safe to retry with the same body: the client retries only these. */
  readonly idempotent: boolean;
  /** The read timeout the catalog asks callers to use (120 s for the render procedures). */
  readonly clientTimeoutSeconds: number;
  /** Exactly one of `url` and `html` must be given. */
  readonly renderInput: boolean;
}

/** Whether `name` is a procedure of the catalog this SDK was generated from. */
export function isProcedureName(name: string): name is ProcedureName {
  return Object.hasOwn(PROCEDURES, name);
}

/**
 * The facts of `name`; a procedure newer than this SDK is never retried (its idempotency is
 * not known) and gets a long read timeout.
 */
export function procedureInfo(name: string): ProcedureInfo {
  if (isProcedureName(name)) {
    return PROCEDURES[name];
  }
  return { name, summary: "", idempotent: false, clientTimeoutSeconds: 120, renderInput: false };
}
