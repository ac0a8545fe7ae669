// The browser files under ./client are imported as text and served as they are.
declare module "./client/*" {
  const text: string;
  export default text;
}

declare module "uplot/dist/*" {
  const text: string;
  export default text;
}
