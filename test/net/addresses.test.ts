// Which addresses the network policy counts as private or reserved, in the forms they can be written in.
import t from 'tap';
import { embeddedV4, isReserved, parseHost } from '../../src/net/addresses.js';
import { NetworkPolicy, parseAllowList } from '../../src/net/policy.js';

t.test('reserved and public addresses', async (t) => {
  const reserved = [
    '0.0.0.0',
    '127.0.0.1',
    '127.255.255.254',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '100.127.255.255',
    '169.254.169.254',
    '224.0.0.1',
    '239.255.255.250',
    '255.255.255.255',
    '198.18.0.1',
    '::',
    '::1',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '2002:7f00:1::',
    '2001:db8::1',
  ];
  for (const ip of reserved) t.ok(isReserved(ip), `${ip} is reserved`);
  for (const ip of [
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ]) {
    t.notOk(isReserved(ip), `${ip} is public`);
  }
  t.equal(embeddedV4('::ffff:7f00:1'), '127.0.0.1');
  t.equal(embeddedV4('2002:a00:1::'), '10.0.0.1');
});

t.test('hosts as written', async (t) => {
  for (const host of ['0x7f000001', '2130706433', '127.1', '0177.0.0.1', '127.0.0.1', '0x7f.0.0.1']) {
    t.same(parseHost(host), { kind: 'ip', address: '127.0.0.1' }, host);
  }
  t.same(parseHost('[::1]'), { kind: 'ip', address: '::1' });
  t.same(parseHost('::FFFF:127.0.0.1'), { kind: 'ip', address: '::ffff:127.0.0.1' });
  t.same(parseHost('DB.Example.com.'), { kind: 'name', name: 'db.example.com' });
  for (const host of ['/var/run/postgresql', 'a,b', 'db:5432', 'a b', '', 'x@y', '1.2.3.4.5', 'foo.123']) {
    t.equal(parseHost(host), undefined, JSON.stringify(host));
  }
});

t.test('the allow list', async (t) => {
  const policy = new NetworkPolicy(parseAllowList(' 10.0.0.0/8, ::1 ,fd00::/8'));
  t.ok(policy.allows('10.2.3.4'));
  t.ok(policy.allows('::ffff:10.2.3.4'), 'an IPv4-mapped form of an allowed address');
  t.ok(policy.allows('::1'));
  t.ok(policy.allows('fd00::5'));
  t.ok(policy.allows('8.8.8.8'), 'public addresses need no listing');
  t.notOk(policy.allows('127.0.0.1'));
  t.notOk(policy.allows('fc00::1'));
  t.throws(() => policy.checkLiteral('0x7f000001'), { name: 'NetworkPolicyError' });
  t.throws(() => policy.checkLiteral('/tmp'), { name: 'InvalidHostError' });
  t.doesNotThrow(() => policy.checkLiteral('localhost'), 'a name is checked when connecting');
  await t.rejects(new NetworkPolicy([]).resolve('localhost'), { name: 'NetworkPolicyError' });
  for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', '::1/129']) {
    t.throws(() => parseAllowList(bad), /ALLOW_PRIVATE_NETWORKS/, bad);
  }
  t.same(parseAllowList(undefined), []);
});
