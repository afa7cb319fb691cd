// A CertificateSigningRequest's spec.request, as the API server stores it: base64 (in the JSON) of
// one PEM block "CERTIFICATE REQUEST", a PKCS#10 request (RFC 2986). Read with @peculiar/x509 on
// WebCrypto into what the kubelet-serving approval rule (cli/plan/csr-approval.ts) judges: the
// subject's CN and O, the DNS and IP subject alternative names, and every other SAN kind (emails,
// URIs, ...) so the rule can refuse them. The request's self-signature is checked (the requester
// holds the key it asks a certificate for); anything that is not exactly one well-formed, validly
// self-signed request gives null. IP addresses are written as Go's net.IP.String() writes them, the
// form a Node's status.addresses uses, so the rule can compare text with text.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { webcrypto } from "node:crypto";

export interface ParsedRequest {
  /** The subject's CN; several CNs are joined with "+", so they never equal one name. */
  commonName: string;
  /** The subject's O values, in order. */
  organizations: string[];
  dnsNames: string[];
  /** Canonical text: dotted IPv4 (also for IPv4-mapped IPv6), RFC 5952 IPv6. */
  ipAddresses: string[];
  /** Every other subject alternative name, as "kind:value" ("email:a@b", "url:https://x", "ip:10.0.0.0/8"). */
  otherSans: string[];
}

const PEM_TYPE = "CERTIFICATE REQUEST";
/** id-ce-subjectAltName (RFC 5280, 4.2.1.6). */
const SUBJECT_ALT_NAME = "2.5.29.17";

/** An IP address in Go's net.IP.String() form, or null when `text` is not one (a range, a zone, junk). */
export function canonicalIp(text: string): string | null {
  const v4 = parseIpv4(text);
  if (v4) return v4.join(".");
  const v6 = parseIpv6(text);
  if (!v6) return null;
  // ::ffff:a.b.c.d is an IPv4 address (Go's To4), written as one.
  if (v6.slice(0, 5).every((g) => g === 0) && v6[5] === 0xffff) return [v6[6]! >> 8, v6[6]! & 0xff, v6[7]! >> 8, v6[7]! & 0xff].join(".");
  // RFC 5952: lower-case hex, no leading zeros, the first longest run of two or more zero groups as "::".
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && v6[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hex = v6.map((g) => g.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

function parseIpv4(text: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return null;
  const parts = m.slice(1).map((p) => (p.length > 1 && p.startsWith("0") ? Number.NaN : Number(p)));
  return parts.every((n) => n >= 0 && n <= 255) ? parts : null;
}

function parseIpv6(text: string): number[] | null {
  if (!/^[0-9a-fA-F:.]+$/.test(text) || !text.includes(":")) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (s: string): number[] | null => {
    if (s === "") return [];
    const out: number[] = [];
    const parts = s.split(":");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      if (i === parts.length - 1 && p.includes(".")) {
        const v4 = parseIpv4(p);
        if (!v4) return null;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) out.push(Number.parseInt(p, 16));
      else return null;
    }
    return out;
  };
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  if (!left || !right) return null;
  if (halves.length === 1) return left.length === 8 ? left : null;
  const missing = 8 - left.length - right.length;
  return missing >= 1 ? [...left, ...new Array<number>(missing).fill(0), ...right] : null;
}

/** The DER of the one PEM block of type CERTIFICATE REQUEST in `pem`, or null (none, several, another type, bad base64). */
function pemBody(pem: string): Buffer | null {
  const blocks = [...pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)];
  if (blocks.length !== 1 || blocks[0]![1] !== PEM_TYPE) return null;
  const b64 = blocks[0]![2]!.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return null;
  const der = Buffer.from(b64, "base64");
  return der.length > 0 ? der : null;
}

/** A PEM CERTIFICATE REQUEST read and its self-signature checked; null when malformed or not validly signed. */
export async function parseCertificateRequestPem(pem: string): Promise<ParsedRequest | null> {
  const der = pemBody(pem);
  if (!der) return null;
  try {
    const req = new x509.Pkcs10CertificateRequest(der);
    if (!(await req.verify(webcrypto as never))) return null;
    const cns = req.subjectName.getField("CN");
    const sans = req.getExtensions(SUBJECT_ALT_NAME);
    if (sans.length > 1) return null; // one extension of a kind, as RFC 5280 asks
    const parsed: ParsedRequest = {
      commonName: cns.join("+"),
      organizations: req.subjectName.getField("O"),
      dnsNames: [],
      ipAddresses: [],
      otherSans: [],
    };
    const san = sans[0];
    if (san && !(san instanceof x509.SubjectAlternativeNameExtension)) return null;
    for (const n of san?.names.items ?? []) {
      if (n.type === "dns") parsed.dnsNames.push(n.value);
      else if (n.type === "ip") {
        const ip = canonicalIp(n.value);
        if (ip) parsed.ipAddresses.push(ip);
        else parsed.otherSans.push(`ip:${n.value}`);
      } else parsed.otherSans.push(`${n.type}:${n.value}`);
    }
    return parsed;
  } catch {
    // Not DER, not a PKCS#10 request, an unknown key or signature algorithm, a SAN this library cannot read.
    return null;
  }
}

/** spec.request of a CertificateSigningRequest as its JSON carries it: base64 of the PEM. */
export async function parseCsrRequest(specRequest: string): Promise<ParsedRequest | null> {
  if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(specRequest)) return null;
  return parseCertificateRequestPem(Buffer.from(specRequest, "base64").toString("latin1"));
}
