// Strict decoding of component config files, as the real components do (they use a strict
// decoder and refuse unknown fields): every key, at every depth, must be a real field of the
// Kubernetes 1.36 type, read from upstream's Go types (data/k8s-config-fields.json).
import data from "../data/k8s-config-fields.json" with { type: "json" };

const TABLES = {
  KubeletConfiguration: {
    fields: data.KubeletConfiguration,
    types: data.KubeletConfigurationFieldTypes,
    refs: data.KubeletConfigurationStructRefs,
  },
  KubeProxyConfiguration: {
    fields: data.KubeProxyConfiguration,
    types: data.KubeProxyConfigurationFieldTypes,
    refs: data.KubeProxyConfigurationStructRefs,
  },
};

/** Returns the dotted paths of unknown fields (empty when the document is clean). */
export function unknownFields(doc, rootType) {
  const t = TABLES[rootType];
  if (!t) throw new Error(`no field table for ${rootType}`);
  const out = [];
  const walk = (obj, type, where) => {
    if (obj === null || typeof obj !== "object" || Array.isArray(obj)) return;
    const allowed = t.fields[type];
    if (!allowed) return void out.push(`${where || "."}: no field list for type ${type}`);
    for (const [k, v] of Object.entries(obj)) {
      const here = where ? `${where}.${k}` : k;
      if (!allowed.includes(k)) {
        out.push(here);
        continue;
      }
      const nested = t.refs[type]?.[k] ?? (t.fields[stripType(t.types[type]?.[k])] ? stripType(t.types[type]?.[k]) : undefined);
      if (!nested) continue;
      if (Array.isArray(v)) v.forEach((item, i) => walk(item, nested, `${here}[${i}]`));
      else if (String(t.types[type]?.[k] ?? "").startsWith("map["))
        for (const [mk, mv] of Object.entries(v ?? {})) walk(mv, nested, `${here}.${mk}`);
      else walk(v, nested, here);
    }
  };
  walk(doc, rootType, "");
  return out;
}

function stripType(s) {
  return String(s ?? "")
    .replace(/\s*\(.*\)$/, "")
    .replace(/^(\*|\[\]|map\[[^\]]*\])+/, "")
    .replace(/^\*/, "")
    .replace(/^\w+\./, "");
}

export function unknownFeatureGates(gates) {
  return Object.keys(gates ?? {}).filter((g) => !data.featureGates.includes(g));
}

export const enums = { ...data.KubeletConfigurationEnums, ...data.KubeProxyConfigurationEnums };
