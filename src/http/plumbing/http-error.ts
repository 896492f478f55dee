// An error that already knows its HTTP answer. The body is always `{"error": message}`.
export class HttpError extends Error {
  override readonly name = 'HttpError';

  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}
