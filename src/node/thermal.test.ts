// The thermal state from NSProcessInfo's raw value, driven through the reader seam; the FFI call
// itself runs only on a Mac.
import { expect, test } from "bun:test";
import { macThermalState, thermalReading } from "./thermal.ts";

test("NSProcessInfoThermalState 0 to 3 are nominal, fair, serious, critical", () => {
  expect([0, 1, 2, 3].map((raw) => thermalReading(() => raw))).toEqual([{ state: "nominal" }, { state: "fair" }, { state: "serious" }, { state: "critical" }]);
});

test("a reader that fails is an unknown state with its reason, never nominal", () => {
  const failing = () => {
    throw new Error("cannot call NSProcessInfo through Bun's FFI: dlopen failed");
  };
  expect(thermalReading(failing)).toEqual({ state: "unknown", reason: "cannot call NSProcessInfo through Bun's FFI: dlopen failed" });
});

test("a value macOS does not define is unknown, saying what came back", () => {
  for (const raw of [4, -1, 1.5, Number.NaN]) {
    expect(thermalReading(() => raw)).toEqual({ state: "unknown", reason: `NSProcessInfo.thermalState was ${raw}, not one of macOS's states (0 to 3)` });
  }
});

test.skipIf(process.platform === "darwin")("off macOS the real reader says so, without opening any library", () => {
  expect(thermalReading(macThermalState)).toEqual({ state: "unknown", reason: `not macOS (${process.platform}): herd reads the thermal state from macOS's NSProcessInfo` });
});

test.if(process.platform === "darwin")("on a Mac the real reader returns one of macOS's states", () => {
  expect(["nominal", "fair", "serious", "critical"]).toContain(thermalReading(macThermalState).state);
});
