// Answers the portal reads from elsewhere (an MDM's inventory, a revocation list, an OpenID
// provider, a node) are read against a byte cap: reading stops and the connection is dropped as
// soon as the cap is passed, so a huge or endless answer (chunked, with no Content-Length to
// refuse it by) costs at most the cap in memory, never its whole size.

/** An answer longer than its cap: reading stopped there. */
export class AnswerTooLargeError extends Error {
  override readonly name = 'AnswerTooLargeError';

  constructor(
    readonly limitBytes: number,
    what: string,
  ) {
    super(`${what} answered more than ${limitBytes} bytes (${describeBytes(limitBytes)}, the limit); reading stopped`);
  }
}

/**
 * The whole of `body` (a fetch Response's body, or undici's), or AnswerTooLargeError once it
 * passes `limitBytes`: the stream is cancelled then, which closes its connection.
 */
export async function readBodyWithin(
  body: AsyncIterable<Uint8Array> | null,
  limitBytes: number,
  what: string,
): Promise<Buffer> {
  if (body === null) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let length = 0;
  // Leaving the loop early (the throw) cancels the stream: a web stream is cancelled, a Node one destroyed.
  for await (const chunk of body) {
    length += chunk.byteLength;
    if (length > limitBytes) throw new AnswerTooLargeError(limitBytes, what);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, length);
}

/** A fetch Response's body against `limitBytes`; a Content-Length above it is refused before reading. */
export async function readResponseWithin(response: Response, limitBytes: number, what: string): Promise<Buffer> {
  if (Number(response.headers.get('content-length') ?? 0) > limitBytes) {
    await response.body?.cancel();
    throw new AnswerTooLargeError(limitBytes, what);
  }
  return readBodyWithin(response.body, limitBytes, what);
}

/**
 * `fetch` for a library that reads the answers itself (openid-client): the Response it hands back
 * has its body counted as it is read, and it fails with AnswerTooLargeError past `limitBytes`.
 */
export function fetchWithin(
  limitBytes: number,
  what: (url: string) => string,
): (input: string | URL, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const response = await fetch(input, init);
    const where = what(String(input));
    if (Number(response.headers.get('content-length') ?? 0) > limitBytes) {
      await response.body?.cancel();
      throw new AnswerTooLargeError(limitBytes, where);
    }
    if (response.body === null) return response;
    let length = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          length += chunk.byteLength;
          // Erroring the transform cancels the source stream, which closes the connection.
          if (length > limitBytes) controller.error(new AnswerTooLargeError(limitBytes, where));
          else controller.enqueue(chunk);
        },
      }),
    );
    const limited = new Response(counted, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    // A new Response has no URL; a library may compare it with the one it asked for.
    Object.defineProperty(limited, 'url', { value: response.url });
    return limited;
  };
}

export function describeBytes(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`
    : `${Math.round(bytes / 1024)} KiB`;
}
