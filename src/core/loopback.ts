// Whether an address or host name is this machine's loopback, in every spelling herd meets: a URL's host
// ("localhost", "[::1]"), a socket's address ("::1", "127.0.0.1", an IPv4-mapped "::ffff:127.0.0.1").

export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || h.startsWith("127.") || h.startsWith("::ffff:127.");
}
