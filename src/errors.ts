/** A problem the user can fix, said in one line; the CLI prints it without a stack trace and exits 1. */
export class UserError extends Error {}
