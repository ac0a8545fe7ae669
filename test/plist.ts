// The XML property lists herd writes, read back: the subset of the format (Apple's plist DTD) they
// use — dict, array, string, integer, true, false — so a test checks a plist field by field.
import { expect } from "bun:test";

export type Plist = string | number | boolean | Plist[] | { [key: string]: Plist };

/** The plist's one top-level value, from its XML. */
export function parsePlist(xml: string): Plist {
  const tokens = [...xml.replace(/<\?xml[^>]*\?>|<!DOCTYPE[^>]*>/g, "").matchAll(/<(\/?)(\w+)(\/?)>([^<]*)/g)];
  let i = 0;
  const unescape = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const value = (): Plist => {
    const [, close, tag, selfClosing, text] = tokens[i++]!;
    if (close) throw new Error(`unexpected </${tag}>`);
    if (selfClosing) return tag === "true";
    const end = () => expect(tokens[i++]!.slice(1, 3)).toEqual(["/", tag]);
    if (tag === "string" || tag === "integer") {
      end();
      return tag === "integer" ? Number(text) : unescape(text!);
    }
    if (tag === "array" || tag === "plist") {
      const items: Plist[] = [];
      while (tokens[i]![1] !== "/") items.push(value());
      end();
      return tag === "plist" ? items[0]! : items;
    }
    if (tag === "dict") {
      const dict: Record<string, Plist> = {};
      while (tokens[i]![1] !== "/") {
        const [, , keyTag, , key] = tokens[i++]!;
        expect(keyTag).toBe("key");
        i++; // </key>
        dict[unescape(key!)] = value();
      }
      end();
      return dict;
    }
    throw new Error(`unexpected <${tag}>`);
  };
  return value();
}
