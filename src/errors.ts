// herd's error words. UserError is for the CLI; the other two are the request path's, whatever
// the kind of request: a NodeFailure sends it on to the next node, a RouteError is the answer.

/** A problem the user can fix, said in one line; the CLI prints it without a stack trace and exits 1. */
export class UserError extends Error {}

/** A node failed before its first byte (unreachable, 5xx, a model it no longer has, silence): another node may answer. */
export class NodeFailure extends Error {
  constructor(
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
  }
}

/**
 * Why a request was not served: the status the client gets, the nodes tried before, when to retry if that is known,
 * the node that ran the request when it was its answer (a 502 from its image server), and what ran it there when
 * that is known (an MLX server past its wall clock).
 */
export class RouteError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retries = 0,
    readonly excluded: string[] = [],
    readonly retryAfterS?: number,
    readonly nodeId: string | null = null,
    readonly ran: { backend: string; model: string } | null = null,
  ) {
    super(message);
  }

  /** The same answer, given by `nodeId` (null: herd's own, not the node's) after `excluded` failed first. */
  from(nodeId: string | null, excluded: string[]): RouteError {
    return new RouteError(this.status, this.message, excluded.length, excluded, this.retryAfterS, nodeId, nodeId === null ? null : this.ran);
  }
}
