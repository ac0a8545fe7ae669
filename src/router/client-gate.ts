// A per-client count with a cap: the requests in flight (routing.clientMaxInFlight),
// the bodies still arriving (server.clientMaxPendingBodies). One caller flooding
// the herd gets 429s instead of starving everyone else.
export class ClientGate {
  private inFlight = new Map<string, number>();

  /** Takes a place for `client`, or returns false when it already has `cap` requests in flight (cap 0 = no cap). */
  enter(client: string, cap: number): boolean {
    const n = this.inFlight.get(client) ?? 0;
    if (cap > 0 && n >= cap) return false;
    this.inFlight.set(client, n + 1);
    return true;
  }

  leave(client: string): void {
    const n = (this.inFlight.get(client) ?? 1) - 1;
    if (n > 0) this.inFlight.set(client, n);
    else this.inFlight.delete(client);
  }
}
