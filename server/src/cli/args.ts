// What the commands' arguments are, parsed and checked once for every command module.
import { InvalidArgumentError, type Command } from 'commander';
import { CHANNEL_KINDS, grantFrom, isChannelKind, Role, type ChannelKind, type Grant } from '@switchboard/contract';

export const bool = (v: string): boolean => {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new InvalidArgumentError('must be true or false');
};

export const versionNumber = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a version number (1, 2, …)');
  return n;
};

export const forceOptions = (cmd: Command) =>
  cmd.option('--force', 'release even when gates fail (needs --reason; recorded)').option('--reason <text>', 'why: recorded in the release record');

export const percentOf = (v: string): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 100) throw new InvalidArgumentError('must be a percent from 0 to 100');
  return n;
};

export const channelOf = (v: string): ChannelKind => {
  if (!isChannelKind(v)) throw new InvalidArgumentError(`must be one of ${CHANNEL_KINDS.join(', ')}`);
  return v;
};

/** `--role builder` (the whole tenant) or `--role operator:acme-support,billing` (those agents only), repeatable. */
export const roleOf = (v: string, previous: Grant[] = []): Grant[] => {
  const grant = grantFrom(v);
  if (!grant) throw new InvalidArgumentError(`a role (${Role.options.join(', ')}), optionally with agents: operator:acme-support,billing`);
  return [...previous, grant];
};
