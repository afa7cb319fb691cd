// The tool's own version. scripts/bundle.mjs replaces __RK8S_VERSION__ at build time
// (from package.json, or RK8S_VERSION for test builds); `npm run dev` shows the package.json one.
declare const __RK8S_VERSION__: string | undefined;

export const VERSION: string = typeof __RK8S_VERSION__ === "string" ? __RK8S_VERSION__ : "0.0.0-dev";
