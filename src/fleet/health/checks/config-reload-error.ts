// The config file on disk is not what runs: a broken edit was refused and the
// fleet still runs the last good config.
import { fold, type HealthCheck } from "../types.ts";

export const configReloadError: HealthCheck = {
  id: "config_reload_error",
  name: "Config reload",
  run({ configStatus }) {
    const error = configStatus.last_error;
    if (!error) return fold([], `running ${configStatus.path ?? "the defaults"} (hash ${configStatus.hash})`);
    return fold(
      [
        {
          severity: "warning",
          finding: `the last edit was refused: ${error.message}; still running hash ${configStatus.hash}`,
          recommendation: `fix the file (\`herd check-config ${configStatus.path ?? "FILE"}\` lists every problem); herd applies it on save.`,
          details: { errors: error.problems, at: error.at, hash: error.hash },
        },
      ],
      "",
    );
  },
};
