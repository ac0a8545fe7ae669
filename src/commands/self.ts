// How this program starts itself: the compiled binary alone, or bun and the entry script.
export function selfCommand(): string[] {
  return Bun.main.startsWith("/$bunfs/") ? [process.execPath] : [process.execPath, Bun.main];
}
