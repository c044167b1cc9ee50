// Values the SDK makes for a request: client-chosen UUIDs and dates in the API's format.

import { randomUUID } from "node:crypto";

/** A client-chosen identifier: a random (version 4) UUID, lowercase. */
export function newUuid(): string {
  return randomUUID();
}

/**
 * A `date` for the API: a string passes as it is; a `Date` is sent in UTC (`…Z`), with
 * milliseconds only when it has some (what the Python SDK sends for the same instant).
 */
export function isoDate(value: string | Date): string;
export function isoDate(value: string | Date | undefined): string | undefined;
export function isoDate(value: string | Date | undefined): string | undefined {
  if (value === undefined || typeof value === "string") {
    return value;
  }
  if (Number.isNaN(value.getTime())) {
    throw new TypeError("an invalid Date cannot be sent as a date");
  }
  const text = value.toISOString();
  return value.getUTCMilliseconds() === 0 ? text.replace(/\.000Z$/, "Z") : text;
}
