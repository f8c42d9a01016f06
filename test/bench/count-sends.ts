/**
 * Counts the commands an SDK client sends (SDK retries not included) by a key made from the
 * command's class name and input, by wrapping `send`.
 */
export function countSends(
  client: { send(command: object, ...rest: unknown[]): unknown },
  keyOf: (commandName: string, input: unknown) => string = (name) => name,
): Map<string, number> {
  const counts = new Map<string, number>();
  const send = client.send.bind(client);
  client.send = (command, ...rest) => {
    const key = keyOf(command.constructor.name, (command as { input?: unknown }).input);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return send(command, ...rest);
  };
  return counts;
}
