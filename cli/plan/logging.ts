// How far the units' log files may grow where there is no journal (cli/apply/log-files.ts rotates
// them; the timer rootless-k8s-logrotate.timer runs it every 5 minutes).

/** A live log file past this is rotated. */
export const LOG_FILE_CAP_BYTES = 10 * 2 ** 20;
/** Rotated generations kept next to the live file (.1 newest). */
export const LOG_GENERATIONS = 2;
/** How often the timer rotates. */
export const LOG_ROTATE_EVERY = "5min";
/** The same in seconds (`rootless-k8s up` runs the rotation itself). */
export const LOG_ROTATE_EVERY_S = 300;
