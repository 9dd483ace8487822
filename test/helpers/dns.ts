import type { Test } from 'tap';
import { createServer, Packet } from 'dns2';

export interface TestDns {
  /** `host:port` for DNS_SERVERS. */
  server: string;
  /**
   * TXT records by lower-case name, each a value or the list of strings it is sent as. A name that is
   * absent answers NXDOMAIN; a name mapped to an empty list answers NOERROR with no record.
   */
  txt: Map<string, (string | string[])[]>;
  /** Names asked for, in order. */
  queries: string[];
}

/** A real DNS server on 127.0.0.1 (UDP, port 0) serving TXT records from `txt`, closed with the test. */
export async function startDns(t: Test): Promise<TestDns> {
  const txt = new Map<string, (string | string[])[]>();
  const queries: string[] = [];
  const server = createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const name = (question?.name ?? '').toLowerCase();
      queries.push(name);
      const values = txt.get(name);
      if (!values) response.header.rcode = 3;
      for (const value of values ?? []) {
        // A TXT string holds at most 255 bytes; longer values go out as several strings.
        const chunks = Array.isArray(value) ? value : (value.match(/[\s\S]{1,255}/g) ?? ['']);
        response.answers.push(
          Packet.createResourceFromQuestion(question!, {
            type: Packet.TYPE.TXT,
            class: Packet.CLASS.IN,
            ttl: 60,
            data: chunks,
          }),
        );
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  t.teardown(() => server.close());
  return { server: `127.0.0.1:${addresses.udp!.port}`, txt, queries };
}
