terasim-pir 1
model tiny
layers 4
sequence 32
devices 3
batch 4
shape strategy=1f1b dp=1 pp=3 tp=1 v=1
# device 0
op F.s0.m0.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-32
op SF.s0.m0.t0-32 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=0-32 peer=1 tensor=act.l2.m0.t0-32 bytes=4096 after=F.s0.m0.t0-32
op F.s0.m1.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-32
op SF.s0.m1.t0-32 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=0-32 peer=1 tensor=act.l2.m1.t0-32 bytes=4096 after=F.s0.m1.t0-32
op F.s0.m2.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=2 rows=1 tokens=0-32
op SF.s0.m2.t0-32 SEND dev=0 stream=send stage=0 mb=2 rows=1 tokens=0-32 peer=1 tensor=act.l2.m2.t0-32 bytes=4096 after=F.s0.m2.t0-32
op RB.s0.m0.t0-32 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m0.t0-32 bytes=4096
op B.s0.m0.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-32 after=RB.s0.m0.t0-32
op F.s0.m3.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=3 rows=1 tokens=0-32
op SF.s0.m3.t0-32 SEND dev=0 stream=send stage=0 mb=3 rows=1 tokens=0-32 peer=1 tensor=act.l2.m3.t0-32 bytes=4096 after=F.s0.m3.t0-32
op RB.s0.m1.t0-32 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m1.t0-32 bytes=4096
op B.s0.m1.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-32 after=RB.s0.m1.t0-32
op RB.s0.m2.t0-32 RECV dev=0 stream=recv stage=0 mb=2 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m2.t0-32 bytes=4096
op B.s0.m2.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=2 rows=1 tokens=0-32 after=RB.s0.m2.t0-32
op RB.s0.m3.t0-32 RECV dev=0 stream=recv stage=0 mb=3 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m3.t0-32 bytes=4096
op B.s0.m3.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=3 rows=1 tokens=0-32 after=RB.s0.m3.t0-32
op OPT.s0.d0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-2
# device 1
op RF.s1.m0.t0-32 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=0-32 peer=0 tensor=act.l2.m0.t0-32 bytes=4096
op F.s1.m0.t0-32 FWD dev=1 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 after=RF.s1.m0.t0-32
op SF.s1.m0.t0-32 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=0-32 peer=2 tensor=act.l3.m0.t0-32 bytes=4096 after=F.s1.m0.t0-32
op RF.s1.m1.t0-32 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=0-32 peer=0 tensor=act.l2.m1.t0-32 bytes=4096
op F.s1.m1.t0-32 FWD dev=1 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-32 after=RF.s1.m1.t0-32
op SF.s1.m1.t0-32 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=0-32 peer=2 tensor=act.l3.m1.t0-32 bytes=4096 after=F.s1.m1.t0-32
op RB.s1.m0.t0-32 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=0-32 peer=2 tensor=grad.l3.m0.t0-32 bytes=4096
op B.s1.m0.t0-32 BWD dev=1 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 after=RB.s1.m0.t0-32
op SB.s1.m0.t0-32 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m0.t0-32 bytes=4096 after=B.s1.m0.t0-32
op RF.s1.m2.t0-32 RECV dev=1 stream=recv stage=1 mb=2 rows=1 tokens=0-32 peer=0 tensor=act.l2.m2.t0-32 bytes=4096
op F.s1.m2.t0-32 FWD dev=1 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-32 after=RF.s1.m2.t0-32
op SF.s1.m2.t0-32 SEND dev=1 stream=send stage=1 mb=2 rows=1 tokens=0-32 peer=2 tensor=act.l3.m2.t0-32 bytes=4096 after=F.s1.m2.t0-32
op RB.s1.m1.t0-32 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=0-32 peer=2 tensor=grad.l3.m1.t0-32 bytes=4096
op B.s1.m1.t0-32 BWD dev=1 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-32 after=RB.s1.m1.t0-32
op SB.s1.m1.t0-32 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m1.t0-32 bytes=4096 after=B.s1.m1.t0-32
op RF.s1.m3.t0-32 RECV dev=1 stream=recv stage=1 mb=3 rows=1 tokens=0-32 peer=0 tensor=act.l2.m3.t0-32 bytes=4096
op F.s1.m3.t0-32 FWD dev=1 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-32 after=RF.s1.m3.t0-32
op SF.s1.m3.t0-32 SEND dev=1 stream=send stage=1 mb=3 rows=1 tokens=0-32 peer=2 tensor=act.l3.m3.t0-32 bytes=4096 after=F.s1.m3.t0-32
op RB.s1.m2.t0-32 RECV dev=1 stream=recv stage=1 mb=2 rows=1 tokens=0-32 peer=2 tensor=grad.l3.m2.t0-32 bytes=4096
op B.s1.m2.t0-32 BWD dev=1 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-32 after=RB.s1.m2.t0-32
op SB.s1.m2.t0-32 SEND dev=1 stream=send stage=1 mb=2 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m2.t0-32 bytes=4096 after=B.s1.m2.t0-32
op RB.s1.m3.t0-32 RECV dev=1 stream=recv stage=1 mb=3 rows=1 tokens=0-32 peer=2 tensor=grad.l3.m3.t0-32 bytes=4096
op B.s1.m3.t0-32 BWD dev=1 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-32 after=RB.s1.m3.t0-32
op SB.s1.m3.t0-32 SEND dev=1 stream=send stage=1 mb=3 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m3.t0-32 bytes=4096 after=B.s1.m3.t0-32
op OPT.s1.d0 OPTIMIZER dev=1 stream=compute stage=1 layers=2-3
# device 2
op RF.s2.m0.t0-32 RECV dev=2 stream=recv stage=2 mb=0 rows=1 tokens=0-32 peer=1 tensor=act.l3.m0.t0-32 bytes=4096
op F.s2.m0.t0-32 FWD dev=2 stream=compute stage=2 layers=3-4 mb=0 rows=1 tokens=0-32 after=RF.s2.m0.t0-32
op B.s2.m0.t0-32 BWD dev=2 stream=compute stage=2 layers=3-4 mb=0 rows=1 tokens=0-32
op SB.s2.m0.t0-32 SEND dev=2 stream=send stage=2 mb=0 rows=1 tokens=0-32 peer=1 tensor=grad.l3.m0.t0-32 bytes=4096 after=B.s2.m0.t0-32
op RF.s2.m1.t0-32 RECV dev=2 stream=recv stage=2 mb=1 rows=1 tokens=0-32 peer=1 tensor=act.l3.m1.t0-32 bytes=4096
op F.s2.m1.t0-32 FWD dev=2 stream=compute stage=2 layers=3-4 mb=1 rows=1 tokens=0-32 after=RF.s2.m1.t0-32
op B.s2.m1.t0-32 BWD dev=2 stream=compute stage=2 layers=3-4 mb=1 rows=1 tokens=0-32
op SB.s2.m1.t0-32 SEND dev=2 stream=send stage=2 mb=1 rows=1 tokens=0-32 peer=1 tensor=grad.l3.m1.t0-32 bytes=4096 after=B.s2.m1.t0-32
op RF.s2.m2.t0-32 RECV dev=2 stream=recv stage=2 mb=2 rows=1 tokens=0-32 peer=1 tensor=act.l3.m2.t0-32 bytes=4096
op B.s2.m2.t0-32 BWD dev=2 stream=compute stage=2 layers=3-4 mb=2 rows=1 tokens=0-32
op F.s2.m2.t0-32 FWD dev=2 stream=compute stage=2 layers=3-4 mb=2 rows=1 tokens=0-32 after=RF.s2.m2.t0-32
op SB.s2.m2.t0-32 SEND dev=2 stream=send stage=2 mb=2 rows=1 tokens=0-32 peer=1 tensor=grad.l3.m2.t0-32 bytes=4096 after=B.s2.m2.t0-32
op RF.s2.m3.t0-32 RECV dev=2 stream=recv stage=2 mb=3 rows=1 tokens=0-32 peer=1 tensor=act.l3.m3.t0-32 bytes=4096
op F.s2.m3.t0-32 FWD dev=2 stream=compute stage=2 layers=3-4 mb=3 rows=1 tokens=0-32 after=RF.s2.m3.t0-32
op B.s2.m3.t0-32 BWD dev=2 stream=compute stage=2 layers=3-4 mb=3 rows=1 tokens=0-32
op SB.s2.m3.t0-32 SEND dev=2 stream=send stage=2 mb=3 rows=1 tokens=0-32 peer=1 tensor=grad.l3.m3.t0-32 bytes=4096 after=B.s2.m3.t0-32
op OPT.s2.d0 OPTIMIZER dev=2 stream=compute stage=2 layers=3-4
