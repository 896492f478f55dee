// A portal whose devices register themselves with their MDM certificate (`registerAs` from the
// certificate's SAN e-mail, profile employees), for the enrollment stories that need one.
import { twoProfiles } from './admin-keys.js';
import { MdmCa } from './mdm-ca.js';
import { startTestPortal, type TestPortal } from './test-portal.js';

export interface RegisterAsPortal {
  readonly ca: MdmCa;
  readonly portal: TestPortal;
  close(): Promise<void>;
}

export async function startRegisterAsPortal(): Promise<RegisterAsPortal> {
  const ca = MdmCa.make();
  try {
    const portal = await startTestPortal({
      config: {
        ...twoProfiles,
        enrollment: ca.mutualTlsEnrollment({ registerAs: { from: 'san-email', profileId: 'employees' } }),
      },
    });
    return {
      ca,
      portal,
      async close() {
        await portal.close();
        ca.remove();
      },
    };
  } catch (error) {
    ca.remove();
    throw error;
  }
}
