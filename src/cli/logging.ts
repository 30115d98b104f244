/** JSON log lines on stderr (stdout stays free for command output) from LOG_LEVEL up. */
import { Layer, Logger, type LogLevel, References } from "effect"
import { labelLine } from "../process/lines.ts"

/** `process` labels every line as `all` labels the lines of the processes it runs. */
export const LoggingLive = (level: LogLevel.LogLevel, process?: string) =>
  Layer.mergeAll(
    Logger.layer([
      Logger.withConsoleError(
        process === undefined ? Logger.formatJson : Logger.map(Logger.formatJson, (line) => labelLine(line, process))
      )
    ]),
    Layer.succeed(References.MinimumLogLevel, level)
  )
