// The SDK's version, sent in the User-Agent (the unit tests check it equals package.json's).
export const VERSION = "0.1.0";
