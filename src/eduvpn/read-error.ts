// The one error the eduVPN reader throws: the deployment cannot be read as it is, and the
// message says what is wrong and where (a table, a row's key and field; a file) so that the
// administrator can fix it. Messages never carry a secret nor a database password.

export class EduVpnReadError extends Error {
  override readonly name = 'EduVpnReadError';
}
