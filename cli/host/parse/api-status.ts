// The API server's own words for a refusal: the `message` of the Status object it answers with.

/** Its Status message, else the body's start. */
export function apiMessage(body: string): string {
  try {
    return (JSON.parse(body) as { message?: string }).message ?? body.slice(0, 200);
  } catch {
    return body.slice(0, 200);
  }
}
