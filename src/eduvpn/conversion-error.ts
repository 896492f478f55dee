// The one error of the config converter: its input cannot be turned into a configuration. The
// message names the option (and the file's line where the reader knows it) and what to do.
export class ConversionError extends Error {}
