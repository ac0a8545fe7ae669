// macOS's thermal state, read as an app reads it: NSProcessInfo.processInfo.thermalState,
// through the Objective-C runtime with Bun's FFI. `pmset -g therm` is not read: an M-series
// Mac never prints its CPU_Speed_Limit, even while it throttles, and an Intel Mac's limit is
// power management's, not the heat's (a cool MacBook Pro without its battery reads 35: Ask Different
// question 407192, test/fixtures/macos/SOURCES.md).
import { dlopen } from "bun:ffi";
import { THERMAL_STATES, type ThermalReading } from "../fleet/heartbeat.ts";

/** NSProcessInfo's thermalState as macOS returns it; throws, saying why, when it cannot be read. */
export type ReadThermalState = () => number;

/** A raw thermalState as a reading: NSProcessInfoThermalState is 0 nominal, 1 fair, 2 serious, 3 critical (Foundation, macOS 10.10.3+). */
export function thermalReading(read: ReadThermalState): ThermalReading {
  let raw: number;
  try {
    raw = read();
  } catch (e) {
    return { state: "unknown", reason: (e as Error).message };
  }
  const state = Number.isInteger(raw) ? THERMAL_STATES[raw] : undefined;
  return state ? { state } : { state: "unknown", reason: `NSProcessInfo.thermalState was ${raw}, not one of macOS's states (0 to 3)` };
}

const LIBOBJC = "/usr/lib/libobjc.A.dylib";
// NSProcessInfo is Foundation's: the class exists once the framework is loaded.
const FOUNDATION = "/System/Library/Frameworks/Foundation.framework/Foundation";

let reader: ReadThermalState | undefined;

/** This Mac's thermalState. The libraries are opened on the first call, never at import, so the Linux binary loads. */
export const macThermalState: ReadThermalState = () => {
  if (process.platform !== "darwin") throw new Error(`not macOS (${process.platform}): herd reads the thermal state from macOS's NSProcessInfo`);
  reader ??= openProcessInfo();
  return reader();
};

function openProcessInfo(): ReadThermalState {
  try {
    dlopen(FOUNDATION, { NSFullUserName: { returns: "ptr" } });
    // objc_msgSend takes the method's own signature: once returning an object, once an NSInteger.
    const objc = dlopen(LIBOBJC, {
      objc_getClass: { args: ["cstring"], returns: "ptr" },
      sel_registerName: { args: ["cstring"], returns: "ptr" },
      objc_msgSend: { args: ["ptr", "ptr"], returns: "ptr" },
    }).symbols;
    const integer = dlopen(LIBOBJC, { objc_msgSend: { args: ["ptr", "ptr"], returns: "i64" } }).symbols;
    const processInfoClass = objc.objc_getClass("NSProcessInfo");
    if (!processInfoClass) throw new Error("the Objective-C runtime has no NSProcessInfo class");
    const processInfo = objc.objc_msgSend(processInfoClass, objc.sel_registerName("processInfo"));
    if (!processInfo) throw new Error("[NSProcessInfo processInfo] returned nil");
    const thermalState = objc.sel_registerName("thermalState");
    return () => Number(integer.objc_msgSend(processInfo, thermalState));
  } catch (e) {
    const why = `cannot call NSProcessInfo through Bun's FFI: ${(e as Error).message}`;
    return () => {
      throw new Error(why);
    };
  }
}
