// The syslog facilities a collector may be given (`accounting.syslog.collectors[].facility`), by
// their usual names; their numbers are RFC 5424's, in the syslog protocol module.
export const SYSLOG_FACILITY_NAMES = [
  'kern',
  'user',
  'mail',
  'daemon',
  'auth',
  'syslog',
  'lpr',
  'news',
  'uucp',
  'cron',
  'authpriv',
  'ftp',
  'ntp',
  'audit',
  'alert',
  'clock',
  'local0',
  'local1',
  'local2',
  'local3',
  'local4',
  'local5',
  'local6',
  'local7',
] as const;

export type SyslogFacilityName = (typeof SYSLOG_FACILITY_NAMES)[number];
