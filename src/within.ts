// Waiting for something with a deadline: the work's outcome, or what `late`
// says once the time is up. The timer never outlives the race, so a settled
// wait does not hold a stopping process open.
export function within<T, U>(work: Promise<T>, ms: number, late: () => U): Promise<T | U> {
  let timer: Timer | undefined;
  const timeout = new Promise<U>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (e) {
        reject(e);
      }
    }, ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
