// The mlx-lm releases the simulated mlx_lm.server behaves as: the current one, and
// the last that loaded its model before it served (0.31.3 moved the load into the
// generation thread, after the server binds).
export const MLX_LM_VERSIONS = ["0.31.2", "0.32.0"] as const;
export type MlxLmVersion = (typeof MLX_LM_VERSIONS)[number];
export const DEFAULT_MLX_LM_VERSION: MlxLmVersion = "0.32.0";

/** The least mlx each release requires (setup.py MIN_MLX_VERSION): what its system fingerprint names. */
export const MLX_OF: Record<MlxLmVersion, string> = { "0.31.2": "0.30.4", "0.32.0": "0.32.1" };
