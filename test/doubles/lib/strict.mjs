// What every double shares: strict flag parsing in the style of spf13/pflag (the real components'
// parser: `--name=value`, `--name value`, bools as `--name` or `--name=true|false`), checks on the
// files the flags name, klog-like log lines, and a clean exit on SIGTERM.
import { X509Certificate, createPrivateKey, createPublicKey } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";

export const VERSION = typeof __DOUBLE_K8S_VERSION__ === "string" ? __DOUBLE_K8S_VERSION__ : "v0.0.0-dev";
/** A fault baked into a deliberately broken test release ("" for a good one), e.g. "apiserver-exit". */
export const FAULT = typeof __DOUBLE_FAULT__ === "string" ? __DOUBLE_FAULT__ : "";

export function log(component, level, msg) {
  const d = new Date();
  const ts = `${String(d.getMonth() + 1).padStart(2, "0")}${String(d.getDate()).padStart(2, "0")} ${d.toISOString().slice(11, 23)}`;
  process.stderr.write(`${level}${ts} ${process.pid} ${component}-double] ${msg}\n`);
}

/** Exits 1 with one line, as the real component does for bad configuration. */
export function die(component, msg) {
  log(component, "E", msg);
  process.exit(1);
}

/**
 * spec: { flagName: "string" | "bool" | "list" | "int" } (list = repeatable or comma list, kept raw).
 * Unknown flags and positional arguments are refused with pflag's wording.
 */
export function parseFlags(component, spec, argv = process.argv.slice(2)) {
  const values = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--version") {
      process.stdout.write(`Kubernetes ${VERSION}\n`);
      process.exit(0);
    }
    if (!a.startsWith("--")) die(component, `unexpected argument "${a}" (flags must be --name=value)`);
    const eq = a.indexOf("=");
    const name = eq === -1 ? a.slice(2) : a.slice(2, eq);
    const type = spec[name];
    if (!type) die(component, `Error: unknown flag: --${name}`);
    let value;
    if (type === "bool") {
      value = eq === -1 ? "true" : a.slice(eq + 1);
      if (value !== "true" && value !== "false")
        die(component, `invalid argument "${value}" for "--${name}" flag: strconv.ParseBool: parsing "${value}": invalid syntax`);
      value = value === "true";
    } else {
      if (eq !== -1) value = a.slice(eq + 1);
      else {
        value = argv[++i];
        if (value === undefined) die(component, `flag needs an argument: --${name}`);
      }
      if (type === "int" && !/^-?\d+$/.test(value))
        die(component, `invalid argument "${value}" for "--${name}" flag: strconv.ParseInt: parsing "${value}": invalid syntax`);
    }
    if (type === "list") values[name] = [...(values[name] ?? []), ...String(value).split(",").filter(Boolean)];
    else values[name] = type === "int" ? Number(value) : value;
  }
  return values;
}

export function requireFlags(component, values, names) {
  for (const n of names) if (values[n] === undefined || values[n] === "") die(component, `--${n} is required`);
}

export function readFileOrDie(component, path, what) {
  if (!path) die(component, `no ${what} given`);
  if (!existsSync(path)) die(component, `${what} "${path}": open ${path}: no such file or directory`);
  try {
    return readFileSync(path);
  } catch (e) {
    die(component, `${what} "${path}": ${e.message}`);
  }
}

/** A private key file must not be readable by group or others. */
export function checkKeyFile(component, path, what) {
  const pem = readFileOrDie(component, path, what);
  const mode = statSync(path).mode & 0o777;
  if (mode & 0o077) die(component, `${what} "${path}" has mode ${mode.toString(8)}; private keys must be 0600`);
  try {
    return createPrivateKey(pem);
  } catch (e) {
    die(component, `${what} "${path}" is not a PEM private key: ${e.message}`);
  }
}

export function loadCert(component, path, what) {
  const pem = readFileOrDie(component, path, what);
  try {
    return new X509Certificate(pem);
  } catch (e) {
    die(component, `${what} "${path}" is not a PEM certificate: ${e.message}`);
  }
}

/** The certificate's key pair and validity, and (when given) its issuer. */
export function checkPair(component, certPath, keyPath, what, caCert) {
  const cert = loadCert(component, certPath, `${what} certificate`);
  const key = checkKeyFile(component, keyPath, `${what} key`);
  if (!cert.checkPrivateKey(key)) die(component, `${what}: private key "${keyPath}" does not match certificate "${certPath}"`);
  const now = Date.now();
  if (Date.parse(cert.validFrom) > now || Date.parse(cert.validTo) < now)
    die(component, `${what} certificate "${certPath}" is not valid now (${cert.validFrom} .. ${cert.validTo})`);
  if (caCert && !cert.verify(caCert.publicKey))
    die(component, `${what} certificate "${certPath}" is not signed by the CA "${caCert.subject}"`);
  return { cert, key };
}

export function checkPublicKeyFile(component, path, what) {
  const pem = readFileOrDie(component, path, what);
  try {
    return createPublicKey(pem);
  } catch {
    try {
      return new X509Certificate(pem).publicKey;
    } catch (e) {
      die(component, `${what} "${path}" holds neither a public key nor a certificate: ${e.message}`);
    }
  }
}

/** Exit 0 on SIGTERM/SIGINT after `cleanup`, like the real daemons' graceful shutdown. */
export function onStop(component, cleanup = async () => {}) {
  const stop = async (sig) => {
    log(component, "I", `received ${sig}, shutting down`);
    try {
      await cleanup();
    } finally {
      process.exit(0);
    }
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

/** Unknown keys of an object against the allowed list, as dotted paths. */
export function unknownKeys(obj, allowed, prefix) {
  return Object.keys(obj ?? {})
    .filter((k) => !allowed.includes(k))
    .map((k) => `${prefix}${k}`);
}
