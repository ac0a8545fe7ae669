// The launchd job herd's service runs, as the XML property list launchctl loads (launchd.plist(5)):
// the same job for a LaunchAgent (the user's GUI session) and a LaunchDaemon (the system domain,
// which runs it as the user named in UserName, with that user's primary group in GroupName).

export interface Job {
  label: string;
  programArguments: string[];
  workingDirectory: string;
  environment: { name: string; value: string }[];
  /** Both stdout and stderr. */
  log: string;
  /** A LaunchDaemon's user and group; a LaunchAgent runs as the user whose session loads it. */
  runAs?: { user: string; group: string };
}

export function launchdPlist(job: Job): string {
  const string = (s: string) => `<string>${escapeXml(s)}</string>`;
  const runAs = job.runAs ? `\n  <key>UserName</key>\n  ${string(job.runAs.user)}\n  <key>GroupName</key>\n  ${string(job.runAs.group)}` : "";
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  ${string(job.label)}
  <key>ProgramArguments</key>
  <array>
${job.programArguments.map((a) => `    ${string(a)}`).join("\n")}
  </array>${runAs}
  <key>WorkingDirectory</key>
  ${string(job.workingDirectory)}
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>EnvironmentVariables</key>
  <dict>
${job.environment.map((e) => `    <key>${escapeXml(e.name)}</key>\n    ${string(e.value)}`).join("\n")}
  </dict>
  <key>ThrottleInterval</key>
  <integer>10</integer>
  <key>StandardOutPath</key>
  ${string(job.log)}
  <key>StandardErrorPath</key>
  ${string(job.log)}
</dict>
</plist>
`;
}

function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
