// What the command-line tools share: commander with usage errors as exit code 2 (1 is kept for
// "the work failed"), and a one-line message for any failure.
import { Command, CommanderError } from 'commander';

export function program(name: string, description: string): Command {
  return new Command(name)
    .description(description)
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(text) });
}

/** Runs a program: 0 on success and --help, 2 on a usage error, 1 when the work failed. */
export async function run(cmd: Command, argv = process.argv): Promise<never> {
  try {
    await cmd.parseAsync(argv);
    process.exit(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
