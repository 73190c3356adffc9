terasim-pir 1
model tiny
layers 4
sequence 32
devices 8
batch 4
shape strategy=terapipe dp=2 pp=2 tp=2 v=1
group tp.d0.s0 0,1
group tp.d0.s1 2,3
group tp.d1.s0 4,5
group tp.d1.s1 6,7
group dp.s0.r0 0,4
group dp.s0.r1 1,5
group dp.s1.r0 2,6
group dp.s1.r1 3,7
group replica.d0 0,1,2,3
group replica.d1 4,5,6,7
# device 0
op F.s0.m0.t0-12.l0.attn.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m0.t0-12.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l0.attn.m0.t0-12 bytes=1536
op F.s0.m0.t0-12.l0.mlp.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m0.t0-12.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l0.mlp.m0.t0-12 bytes=1536
op F.s0.m0.t0-12.l1.attn.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m0.t0-12.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l1.attn.m0.t0-12 bytes=1536
op F.s0.m0.t0-12.l1.mlp.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m0.t0-12.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l1.mlp.m0.t0-12 bytes=1536
op SF.s0.m0.t0-12.r0 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=0-12 peer=2 tensor=act.l2.m0.t0-12.r0 bytes=1536 after=ARF.s0.m0.t0-12.l1.mlp.r0
op F.s0.m0.t12-32.l0.attn.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m0.t12-32.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l0.attn.m0.t12-32 bytes=2560
op F.s0.m0.t12-32.l0.mlp.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m0.t12-32.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l0.mlp.m0.t12-32 bytes=2560
op F.s0.m0.t12-32.l1.attn.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m0.t12-32.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l1.attn.m0.t12-32 bytes=2560
op F.s0.m0.t12-32.l1.mlp.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m0.t12-32.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l1.mlp.m0.t12-32 bytes=2560
op SF.s0.m0.t12-32.r0 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=12-32 peer=2 tensor=act.l2.m0.t12-32.r0 bytes=2560 after=ARF.s0.m0.t12-32.l1.mlp.r0
op F.s0.m1.t0-12.l0.attn.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m1.t0-12.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l0.attn.m1.t0-12 bytes=1536
op F.s0.m1.t0-12.l0.mlp.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m1.t0-12.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l0.mlp.m1.t0-12 bytes=1536
op F.s0.m1.t0-12.l1.attn.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m1.t0-12.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l1.attn.m1.t0-12 bytes=1536
op F.s0.m1.t0-12.l1.mlp.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m1.t0-12.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l1.mlp.m1.t0-12 bytes=1536
op SF.s0.m1.t0-12.r0 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=0-12 peer=2 tensor=act.l2.m1.t0-12.r0 bytes=1536 after=ARF.s0.m1.t0-12.l1.mlp.r0
op RB.s0.m0.t12-32.r0 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=12-32 peer=2 tensor=grad.l2.m0.t12-32.r0 bytes=2560
op B.s0.m0.t12-32.l1.mlp.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s0 after=RB.s0.m0.t12-32.r0
op ARB.s0.m0.t12-32.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l1.mlp.m0.t12-32 bytes=2560
op B.s0.m0.t12-32.l1.attn.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m0.t12-32.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l1.attn.m0.t12-32 bytes=2560
op B.s0.m0.t12-32.l0.mlp.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m0.t12-32.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l0.mlp.m0.t12-32 bytes=2560
op B.s0.m0.t12-32.l0.attn.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m0.t12-32.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l0.attn.m0.t12-32 bytes=2560
op F.s0.m1.t12-32.l0.attn.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m1.t12-32.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l0.attn.m1.t12-32 bytes=2560
op F.s0.m1.t12-32.l0.mlp.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m1.t12-32.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l0.mlp.m1.t12-32 bytes=2560
op F.s0.m1.t12-32.l1.attn.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m1.t12-32.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l1.attn.m1.t12-32 bytes=2560
op F.s0.m1.t12-32.l1.mlp.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m1.t12-32.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l1.mlp.m1.t12-32 bytes=2560
op SF.s0.m1.t12-32.r0 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=12-32 peer=2 tensor=act.l2.m1.t12-32.r0 bytes=2560 after=ARF.s0.m1.t12-32.l1.mlp.r0
op RB.s0.m0.t0-12.r0 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=0-12 peer=2 tensor=grad.l2.m0.t0-12.r0 bytes=1536
op B.s0.m0.t0-12.l1.mlp.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s0 after=RB.s0.m0.t0-12.r0
op ARB.s0.m0.t0-12.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l1.mlp.m0.t0-12 bytes=1536
op B.s0.m0.t0-12.l1.attn.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m0.t0-12.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l1.attn.m0.t0-12 bytes=1536
op B.s0.m0.t0-12.l0.mlp.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m0.t0-12.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l0.mlp.m0.t0-12 bytes=1536
op B.s0.m0.t0-12.l0.attn.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m0.t0-12.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l0.attn.m0.t0-12 bytes=1536
op RB.s0.m1.t12-32.r0 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=12-32 peer=2 tensor=grad.l2.m1.t12-32.r0 bytes=2560
op B.s0.m1.t12-32.l1.mlp.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s0 after=RB.s0.m1.t12-32.r0
op ARB.s0.m1.t12-32.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l1.mlp.m1.t12-32 bytes=2560
op B.s0.m1.t12-32.l1.attn.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m1.t12-32.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l1.attn.m1.t12-32 bytes=2560
op B.s0.m1.t12-32.l0.mlp.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m1.t12-32.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l0.mlp.m1.t12-32 bytes=2560
op B.s0.m1.t12-32.l0.attn.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m1.t12-32.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l0.attn.m1.t12-32 bytes=2560
op RB.s0.m1.t0-12.r0 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=0-12 peer=2 tensor=grad.l2.m1.t0-12.r0 bytes=1536
op B.s0.m1.t0-12.l1.mlp.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s0 after=RB.s0.m1.t0-12.r0
op ARB.s0.m1.t0-12.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l1.mlp.m1.t0-12 bytes=1536
op B.s0.m1.t0-12.l1.attn.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m1.t0-12.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l1.attn.m1.t0-12 bytes=1536
op B.s0.m1.t0-12.l0.mlp.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m1.t0-12.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l0.mlp.m1.t0-12 bytes=1536
op B.s0.m1.t0-12.l0.attn.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m1.t0-12.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l0.attn.m1.t0-12 bytes=1536
op BAR.p0.d0.r0 ALLREDUCE dev=0 stream=dp group=replica.d0 tensor=barrier.d0 bytes=4 after=ARB.s0.m1.t0-12.l0.attn.r0
op DP.s0.d0.r0 ALLREDUCE dev=0 stream=dp stage=0 layers=0-2 group=dp.s0.r0 tensor=wgrad.s0.r0 bytes=99968 after=ARB.s0.m1.t0-12.l0.attn.r0,BAR.p0.d0.r0
op OPT.s0.d0.r0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-2 after=DP.s0.d0.r0
# device 1
op F.s0.m0.t0-12.l0.attn.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m0.t0-12.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l0.attn.m0.t0-12 bytes=1536
op F.s0.m0.t0-12.l0.mlp.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m0.t0-12.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l0.mlp.m0.t0-12 bytes=1536
op F.s0.m0.t0-12.l1.attn.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m0.t0-12.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l1.attn.m0.t0-12 bytes=1536
op F.s0.m0.t0-12.l1.mlp.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m0.t0-12.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l1.mlp.m0.t0-12 bytes=1536
op SF.s0.m0.t0-12.r1 SEND dev=1 stream=send stage=0 mb=0 rows=1 tokens=0-12 peer=3 tensor=act.l2.m0.t0-12.r1 bytes=1536 after=ARF.s0.m0.t0-12.l1.mlp.r1
op F.s0.m0.t12-32.l0.attn.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m0.t12-32.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l0.attn.m0.t12-32 bytes=2560
op F.s0.m0.t12-32.l0.mlp.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m0.t12-32.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l0.mlp.m0.t12-32 bytes=2560
op F.s0.m0.t12-32.l1.attn.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m0.t12-32.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l1.attn.m0.t12-32 bytes=2560
op F.s0.m0.t12-32.l1.mlp.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m0.t12-32.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l1.mlp.m0.t12-32 bytes=2560
op SF.s0.m0.t12-32.r1 SEND dev=1 stream=send stage=0 mb=0 rows=1 tokens=12-32 peer=3 tensor=act.l2.m0.t12-32.r1 bytes=2560 after=ARF.s0.m0.t12-32.l1.mlp.r1
op F.s0.m1.t0-12.l0.attn.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m1.t0-12.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l0.attn.m1.t0-12 bytes=1536
op F.s0.m1.t0-12.l0.mlp.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m1.t0-12.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l0.mlp.m1.t0-12 bytes=1536
op F.s0.m1.t0-12.l1.attn.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m1.t0-12.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l1.attn.m1.t0-12 bytes=1536
op F.s0.m1.t0-12.l1.mlp.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARF.s0.m1.t0-12.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpf.l1.mlp.m1.t0-12 bytes=1536
op SF.s0.m1.t0-12.r1 SEND dev=1 stream=send stage=0 mb=1 rows=1 tokens=0-12 peer=3 tensor=act.l2.m1.t0-12.r1 bytes=1536 after=ARF.s0.m1.t0-12.l1.mlp.r1
op RB.s0.m0.t12-32.r1 RECV dev=1 stream=recv stage=0 mb=0 rows=1 tokens=12-32 peer=3 tensor=grad.l2.m0.t12-32.r1 bytes=2560
op B.s0.m0.t12-32.l1.mlp.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s0 after=RB.s0.m0.t12-32.r1
op ARB.s0.m0.t12-32.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l1.mlp.m0.t12-32 bytes=2560
op B.s0.m0.t12-32.l1.attn.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m0.t12-32.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l1.attn.m0.t12-32 bytes=2560
op B.s0.m0.t12-32.l0.mlp.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m0.t12-32.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l0.mlp.m0.t12-32 bytes=2560
op B.s0.m0.t12-32.l0.attn.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m0.t12-32.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l0.attn.m0.t12-32 bytes=2560
op F.s0.m1.t12-32.l0.attn.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m1.t12-32.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l0.attn.m1.t12-32 bytes=2560
op F.s0.m1.t12-32.l0.mlp.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m1.t12-32.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l0.mlp.m1.t12-32 bytes=2560
op F.s0.m1.t12-32.l1.attn.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m1.t12-32.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l1.attn.m1.t12-32 bytes=2560
op F.s0.m1.t12-32.l1.mlp.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARF.s0.m1.t12-32.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpf.l1.mlp.m1.t12-32 bytes=2560
op SF.s0.m1.t12-32.r1 SEND dev=1 stream=send stage=0 mb=1 rows=1 tokens=12-32 peer=3 tensor=act.l2.m1.t12-32.r1 bytes=2560 after=ARF.s0.m1.t12-32.l1.mlp.r1
op RB.s0.m0.t0-12.r1 RECV dev=1 stream=recv stage=0 mb=0 rows=1 tokens=0-12 peer=3 tensor=grad.l2.m0.t0-12.r1 bytes=1536
op B.s0.m0.t0-12.l1.mlp.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s0 after=RB.s0.m0.t0-12.r1
op ARB.s0.m0.t0-12.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l1.mlp.m0.t0-12 bytes=1536
op B.s0.m0.t0-12.l1.attn.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m0.t0-12.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l1.attn.m0.t0-12 bytes=1536
op B.s0.m0.t0-12.l0.mlp.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m0.t0-12.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l0.mlp.m0.t0-12 bytes=1536
op B.s0.m0.t0-12.l0.attn.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m0.t0-12.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l0.attn.m0.t0-12 bytes=1536
op RB.s0.m1.t12-32.r1 RECV dev=1 stream=recv stage=0 mb=1 rows=1 tokens=12-32 peer=3 tensor=grad.l2.m1.t12-32.r1 bytes=2560
op B.s0.m1.t12-32.l1.mlp.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s0 after=RB.s0.m1.t12-32.r1
op ARB.s0.m1.t12-32.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l1.mlp.m1.t12-32 bytes=2560
op B.s0.m1.t12-32.l1.attn.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m1.t12-32.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l1.attn.m1.t12-32 bytes=2560
op B.s0.m1.t12-32.l0.mlp.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m1.t12-32.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l0.mlp.m1.t12-32 bytes=2560
op B.s0.m1.t12-32.l0.attn.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s0
op ARB.s0.m1.t12-32.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=12-32 group=tp.d0.s0 tensor=tpb.l0.attn.m1.t12-32 bytes=2560
op RB.s0.m1.t0-12.r1 RECV dev=1 stream=recv stage=0 mb=1 rows=1 tokens=0-12 peer=3 tensor=grad.l2.m1.t0-12.r1 bytes=1536
op B.s0.m1.t0-12.l1.mlp.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s0 after=RB.s0.m1.t0-12.r1
op ARB.s0.m1.t0-12.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l1.mlp.m1.t0-12 bytes=1536
op B.s0.m1.t0-12.l1.attn.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m1.t0-12.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l1.attn.m1.t0-12 bytes=1536
op B.s0.m1.t0-12.l0.mlp.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m1.t0-12.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l0.mlp.m1.t0-12 bytes=1536
op B.s0.m1.t0-12.l0.attn.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s0
op ARB.s0.m1.t0-12.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=1 rows=1 tokens=0-12 group=tp.d0.s0 tensor=tpb.l0.attn.m1.t0-12 bytes=1536
op BAR.p0.d0.r1 ALLREDUCE dev=1 stream=dp group=replica.d0 tensor=barrier.d0 bytes=4 after=ARB.s0.m1.t0-12.l0.attn.r1
op DP.s0.d0.r1 ALLREDUCE dev=1 stream=dp stage=0 layers=0-2 group=dp.s0.r1 tensor=wgrad.s0.r1 bytes=99968 after=ARB.s0.m1.t0-12.l0.attn.r1,BAR.p0.d0.r1
op OPT.s0.d0.r1 OPTIMIZER dev=1 stream=compute stage=0 layers=0-2 after=DP.s0.d0.r1
# device 2
op RF.s1.m0.t0-12.r0 RECV dev=2 stream=recv stage=1 mb=0 rows=1 tokens=0-12 peer=0 tensor=act.l2.m0.t0-12.r0 bytes=1536
op F.s1.m0.t0-12.l2.attn.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s1 after=RF.s1.m0.t0-12.r0
op ARF.s1.m0.t0-12.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l2.attn.m0.t0-12 bytes=1536
op F.s1.m0.t0-12.l2.mlp.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m0.t0-12.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l2.mlp.m0.t0-12 bytes=1536
op F.s1.m0.t0-12.l3.attn.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m0.t0-12.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l3.attn.m0.t0-12 bytes=1536
op F.s1.m0.t0-12.l3.mlp.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m0.t0-12.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l3.mlp.m0.t0-12 bytes=1536
op RF.s1.m0.t12-32.r0 RECV dev=2 stream=recv stage=1 mb=0 rows=1 tokens=12-32 peer=0 tensor=act.l2.m0.t12-32.r0 bytes=2560
op F.s1.m0.t12-32.l2.attn.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s1 after=RF.s1.m0.t12-32.r0
op ARF.s1.m0.t12-32.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l2.attn.m0.t12-32 bytes=2560
op F.s1.m0.t12-32.l2.mlp.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m0.t12-32.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l2.mlp.m0.t12-32 bytes=2560
op F.s1.m0.t12-32.l3.attn.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m0.t12-32.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l3.attn.m0.t12-32 bytes=2560
op F.s1.m0.t12-32.l3.mlp.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m0.t12-32.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l3.mlp.m0.t12-32 bytes=2560
op B.s1.m0.t12-32.l3.mlp.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m0.t12-32.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l3.mlp.m0.t12-32 bytes=2560
op B.s1.m0.t12-32.l3.attn.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m0.t12-32.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l3.attn.m0.t12-32 bytes=2560
op B.s1.m0.t12-32.l2.mlp.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m0.t12-32.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l2.mlp.m0.t12-32 bytes=2560
op B.s1.m0.t12-32.l2.attn.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m0.t12-32.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l2.attn.m0.t12-32 bytes=2560
op SB.s1.m0.t12-32.r0 SEND dev=2 stream=send stage=1 mb=0 rows=1 tokens=12-32 peer=0 tensor=grad.l2.m0.t12-32.r0 bytes=2560 after=ARB.s1.m0.t12-32.l2.attn.r0
op RF.s1.m1.t0-12.r0 RECV dev=2 stream=recv stage=1 mb=1 rows=1 tokens=0-12 peer=0 tensor=act.l2.m1.t0-12.r0 bytes=1536
op F.s1.m1.t0-12.l2.attn.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s1 after=RF.s1.m1.t0-12.r0
op ARF.s1.m1.t0-12.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l2.attn.m1.t0-12 bytes=1536
op F.s1.m1.t0-12.l2.mlp.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m1.t0-12.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l2.mlp.m1.t0-12 bytes=1536
op F.s1.m1.t0-12.l3.attn.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m1.t0-12.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l3.attn.m1.t0-12 bytes=1536
op F.s1.m1.t0-12.l3.mlp.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m1.t0-12.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l3.mlp.m1.t0-12 bytes=1536
op B.s1.m0.t0-12.l3.mlp.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m0.t0-12.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l3.mlp.m0.t0-12 bytes=1536
op B.s1.m0.t0-12.l3.attn.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m0.t0-12.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l3.attn.m0.t0-12 bytes=1536
op B.s1.m0.t0-12.l2.mlp.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m0.t0-12.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l2.mlp.m0.t0-12 bytes=1536
op B.s1.m0.t0-12.l2.attn.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m0.t0-12.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l2.attn.m0.t0-12 bytes=1536
op SB.s1.m0.t0-12.r0 SEND dev=2 stream=send stage=1 mb=0 rows=1 tokens=0-12 peer=0 tensor=grad.l2.m0.t0-12.r0 bytes=1536 after=ARB.s1.m0.t0-12.l2.attn.r0
op RF.s1.m1.t12-32.r0 RECV dev=2 stream=recv stage=1 mb=1 rows=1 tokens=12-32 peer=0 tensor=act.l2.m1.t12-32.r0 bytes=2560
op F.s1.m1.t12-32.l2.attn.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s1 after=RF.s1.m1.t12-32.r0
op ARF.s1.m1.t12-32.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l2.attn.m1.t12-32 bytes=2560
op F.s1.m1.t12-32.l2.mlp.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m1.t12-32.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l2.mlp.m1.t12-32 bytes=2560
op F.s1.m1.t12-32.l3.attn.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m1.t12-32.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l3.attn.m1.t12-32 bytes=2560
op F.s1.m1.t12-32.l3.mlp.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m1.t12-32.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l3.mlp.m1.t12-32 bytes=2560
op B.s1.m1.t12-32.l3.mlp.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m1.t12-32.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l3.mlp.m1.t12-32 bytes=2560
op B.s1.m1.t12-32.l3.attn.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m1.t12-32.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l3.attn.m1.t12-32 bytes=2560
op B.s1.m1.t12-32.l2.mlp.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m1.t12-32.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l2.mlp.m1.t12-32 bytes=2560
op B.s1.m1.t12-32.l2.attn.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m1.t12-32.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l2.attn.m1.t12-32 bytes=2560
op SB.s1.m1.t12-32.r0 SEND dev=2 stream=send stage=1 mb=1 rows=1 tokens=12-32 peer=0 tensor=grad.l2.m1.t12-32.r0 bytes=2560 after=ARB.s1.m1.t12-32.l2.attn.r0
op B.s1.m1.t0-12.l3.mlp.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m1.t0-12.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l3.mlp.m1.t0-12 bytes=1536
op B.s1.m1.t0-12.l3.attn.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m1.t0-12.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l3.attn.m1.t0-12 bytes=1536
op B.s1.m1.t0-12.l2.mlp.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m1.t0-12.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l2.mlp.m1.t0-12 bytes=1536
op B.s1.m1.t0-12.l2.attn.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m1.t0-12.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l2.attn.m1.t0-12 bytes=1536
op SB.s1.m1.t0-12.r0 SEND dev=2 stream=send stage=1 mb=1 rows=1 tokens=0-12 peer=0 tensor=grad.l2.m1.t0-12.r0 bytes=1536 after=ARB.s1.m1.t0-12.l2.attn.r0
op BAR.p1.d0.r0 ALLREDUCE dev=2 stream=dp group=replica.d0 tensor=barrier.d0 bytes=4 after=ARB.s1.m1.t0-12.l2.attn.r0
op DP.s1.d0.r0 ALLREDUCE dev=2 stream=dp stage=1 layers=2-4 group=dp.s1.r0 tensor=wgrad.s1.r0 bytes=99968 after=ARB.s1.m1.t0-12.l2.attn.r0,BAR.p1.d0.r0
op OPT.s1.d0.r0 OPTIMIZER dev=2 stream=compute stage=1 layers=2-4 after=DP.s1.d0.r0
# device 3
op RF.s1.m0.t0-12.r1 RECV dev=3 stream=recv stage=1 mb=0 rows=1 tokens=0-12 peer=1 tensor=act.l2.m0.t0-12.r1 bytes=1536
op F.s1.m0.t0-12.l2.attn.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s1 after=RF.s1.m0.t0-12.r1
op ARF.s1.m0.t0-12.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l2.attn.m0.t0-12 bytes=1536
op F.s1.m0.t0-12.l2.mlp.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m0.t0-12.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l2.mlp.m0.t0-12 bytes=1536
op F.s1.m0.t0-12.l3.attn.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m0.t0-12.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l3.attn.m0.t0-12 bytes=1536
op F.s1.m0.t0-12.l3.mlp.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m0.t0-12.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l3.mlp.m0.t0-12 bytes=1536
op RF.s1.m0.t12-32.r1 RECV dev=3 stream=recv stage=1 mb=0 rows=1 tokens=12-32 peer=1 tensor=act.l2.m0.t12-32.r1 bytes=2560
op F.s1.m0.t12-32.l2.attn.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s1 after=RF.s1.m0.t12-32.r1
op ARF.s1.m0.t12-32.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l2.attn.m0.t12-32 bytes=2560
op F.s1.m0.t12-32.l2.mlp.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m0.t12-32.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l2.mlp.m0.t12-32 bytes=2560
op F.s1.m0.t12-32.l3.attn.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m0.t12-32.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l3.attn.m0.t12-32 bytes=2560
op F.s1.m0.t12-32.l3.mlp.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m0.t12-32.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l3.mlp.m0.t12-32 bytes=2560
op B.s1.m0.t12-32.l3.mlp.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m0.t12-32.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l3.mlp.m0.t12-32 bytes=2560
op B.s1.m0.t12-32.l3.attn.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m0.t12-32.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l3.attn.m0.t12-32 bytes=2560
op B.s1.m0.t12-32.l2.mlp.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m0.t12-32.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l2.mlp.m0.t12-32 bytes=2560
op B.s1.m0.t12-32.l2.attn.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m0.t12-32.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l2.attn.m0.t12-32 bytes=2560
op SB.s1.m0.t12-32.r1 SEND dev=3 stream=send stage=1 mb=0 rows=1 tokens=12-32 peer=1 tensor=grad.l2.m0.t12-32.r1 bytes=2560 after=ARB.s1.m0.t12-32.l2.attn.r1
op RF.s1.m1.t0-12.r1 RECV dev=3 stream=recv stage=1 mb=1 rows=1 tokens=0-12 peer=1 tensor=act.l2.m1.t0-12.r1 bytes=1536
op F.s1.m1.t0-12.l2.attn.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s1 after=RF.s1.m1.t0-12.r1
op ARF.s1.m1.t0-12.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l2.attn.m1.t0-12 bytes=1536
op F.s1.m1.t0-12.l2.mlp.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m1.t0-12.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l2.mlp.m1.t0-12 bytes=1536
op F.s1.m1.t0-12.l3.attn.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m1.t0-12.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l3.attn.m1.t0-12 bytes=1536
op F.s1.m1.t0-12.l3.mlp.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARF.s1.m1.t0-12.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpf.l3.mlp.m1.t0-12 bytes=1536
op B.s1.m0.t0-12.l3.mlp.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m0.t0-12.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l3.mlp.m0.t0-12 bytes=1536
op B.s1.m0.t0-12.l3.attn.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m0.t0-12.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l3.attn.m0.t0-12 bytes=1536
op B.s1.m0.t0-12.l2.mlp.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m0.t0-12.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l2.mlp.m0.t0-12 bytes=1536
op B.s1.m0.t0-12.l2.attn.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m0.t0-12.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l2.attn.m0.t0-12 bytes=1536
op SB.s1.m0.t0-12.r1 SEND dev=3 stream=send stage=1 mb=0 rows=1 tokens=0-12 peer=1 tensor=grad.l2.m0.t0-12.r1 bytes=1536 after=ARB.s1.m0.t0-12.l2.attn.r1
op RF.s1.m1.t12-32.r1 RECV dev=3 stream=recv stage=1 mb=1 rows=1 tokens=12-32 peer=1 tensor=act.l2.m1.t12-32.r1 bytes=2560
op F.s1.m1.t12-32.l2.attn.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s1 after=RF.s1.m1.t12-32.r1
op ARF.s1.m1.t12-32.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l2.attn.m1.t12-32 bytes=2560
op F.s1.m1.t12-32.l2.mlp.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m1.t12-32.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l2.mlp.m1.t12-32 bytes=2560
op F.s1.m1.t12-32.l3.attn.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m1.t12-32.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l3.attn.m1.t12-32 bytes=2560
op F.s1.m1.t12-32.l3.mlp.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARF.s1.m1.t12-32.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpf.l3.mlp.m1.t12-32 bytes=2560
op B.s1.m1.t12-32.l3.mlp.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m1.t12-32.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l3.mlp.m1.t12-32 bytes=2560
op B.s1.m1.t12-32.l3.attn.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m1.t12-32.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l3.attn.m1.t12-32 bytes=2560
op B.s1.m1.t12-32.l2.mlp.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m1.t12-32.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l2.mlp.m1.t12-32 bytes=2560
op B.s1.m1.t12-32.l2.attn.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=1 rows=1 tokens=12-32 group=tp.d0.s1
op ARB.s1.m1.t12-32.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=12-32 group=tp.d0.s1 tensor=tpb.l2.attn.m1.t12-32 bytes=2560
op SB.s1.m1.t12-32.r1 SEND dev=3 stream=send stage=1 mb=1 rows=1 tokens=12-32 peer=1 tensor=grad.l2.m1.t12-32.r1 bytes=2560 after=ARB.s1.m1.t12-32.l2.attn.r1
op B.s1.m1.t0-12.l3.mlp.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m1.t0-12.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l3.mlp.m1.t0-12 bytes=1536
op B.s1.m1.t0-12.l3.attn.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m1.t0-12.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l3.attn.m1.t0-12 bytes=1536
op B.s1.m1.t0-12.l2.mlp.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m1.t0-12.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l2.mlp.m1.t0-12 bytes=1536
op B.s1.m1.t0-12.l2.attn.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=1 rows=1 tokens=0-12 group=tp.d0.s1
op ARB.s1.m1.t0-12.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=1 rows=1 tokens=0-12 group=tp.d0.s1 tensor=tpb.l2.attn.m1.t0-12 bytes=1536
op SB.s1.m1.t0-12.r1 SEND dev=3 stream=send stage=1 mb=1 rows=1 tokens=0-12 peer=1 tensor=grad.l2.m1.t0-12.r1 bytes=1536 after=ARB.s1.m1.t0-12.l2.attn.r1
op BAR.p1.d0.r1 ALLREDUCE dev=3 stream=dp group=replica.d0 tensor=barrier.d0 bytes=4 after=ARB.s1.m1.t0-12.l2.attn.r1
op DP.s1.d0.r1 ALLREDUCE dev=3 stream=dp stage=1 layers=2-4 group=dp.s1.r1 tensor=wgrad.s1.r1 bytes=99968 after=ARB.s1.m1.t0-12.l2.attn.r1,BAR.p1.d0.r1
op OPT.s1.d0.r1 OPTIMIZER dev=3 stream=compute stage=1 layers=2-4 after=DP.s1.d0.r1
# device 4
op F.s0.m2.t0-12.l0.attn.r0 FWD dev=4 stream=compute stage=0 layers=0-1 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m2.t0-12.l0.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l0.attn.m2.t0-12 bytes=1536
op F.s0.m2.t0-12.l0.mlp.r0 FWD dev=4 stream=compute stage=0 layers=0-1 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m2.t0-12.l0.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l0.mlp.m2.t0-12 bytes=1536
op F.s0.m2.t0-12.l1.attn.r0 FWD dev=4 stream=compute stage=0 layers=1-2 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m2.t0-12.l1.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l1.attn.m2.t0-12 bytes=1536
op F.s0.m2.t0-12.l1.mlp.r0 FWD dev=4 stream=compute stage=0 layers=1-2 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m2.t0-12.l1.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l1.mlp.m2.t0-12 bytes=1536
op SF.s0.m2.t0-12.r0 SEND dev=4 stream=send stage=0 mb=2 rows=1 tokens=0-12 peer=6 tensor=act.l2.m2.t0-12.r0 bytes=1536 after=ARF.s0.m2.t0-12.l1.mlp.r0
op F.s0.m2.t12-32.l0.attn.r0 FWD dev=4 stream=compute stage=0 layers=0-1 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m2.t12-32.l0.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l0.attn.m2.t12-32 bytes=2560
op F.s0.m2.t12-32.l0.mlp.r0 FWD dev=4 stream=compute stage=0 layers=0-1 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m2.t12-32.l0.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l0.mlp.m2.t12-32 bytes=2560
op F.s0.m2.t12-32.l1.attn.r0 FWD dev=4 stream=compute stage=0 layers=1-2 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m2.t12-32.l1.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l1.attn.m2.t12-32 bytes=2560
op F.s0.m2.t12-32.l1.mlp.r0 FWD dev=4 stream=compute stage=0 layers=1-2 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m2.t12-32.l1.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l1.mlp.m2.t12-32 bytes=2560
op SF.s0.m2.t12-32.r0 SEND dev=4 stream=send stage=0 mb=2 rows=1 tokens=12-32 peer=6 tensor=act.l2.m2.t12-32.r0 bytes=2560 after=ARF.s0.m2.t12-32.l1.mlp.r0
op F.s0.m3.t0-12.l0.attn.r0 FWD dev=4 stream=compute stage=0 layers=0-1 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m3.t0-12.l0.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l0.attn.m3.t0-12 bytes=1536
op F.s0.m3.t0-12.l0.mlp.r0 FWD dev=4 stream=compute stage=0 layers=0-1 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m3.t0-12.l0.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l0.mlp.m3.t0-12 bytes=1536
op F.s0.m3.t0-12.l1.attn.r0 FWD dev=4 stream=compute stage=0 layers=1-2 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m3.t0-12.l1.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l1.attn.m3.t0-12 bytes=1536
op F.s0.m3.t0-12.l1.mlp.r0 FWD dev=4 stream=compute stage=0 layers=1-2 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m3.t0-12.l1.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l1.mlp.m3.t0-12 bytes=1536
op SF.s0.m3.t0-12.r0 SEND dev=4 stream=send stage=0 mb=3 rows=1 tokens=0-12 peer=6 tensor=act.l2.m3.t0-12.r0 bytes=1536 after=ARF.s0.m3.t0-12.l1.mlp.r0
op RB.s0.m2.t12-32.r0 RECV dev=4 stream=recv stage=0 mb=2 rows=1 tokens=12-32 peer=6 tensor=grad.l2.m2.t12-32.r0 bytes=2560
op B.s0.m2.t12-32.l1.mlp.r0 BWD dev=4 stream=compute stage=0 layers=1-2 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s0 after=RB.s0.m2.t12-32.r0
op ARB.s0.m2.t12-32.l1.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l1.mlp.m2.t12-32 bytes=2560
op B.s0.m2.t12-32.l1.attn.r0 BWD dev=4 stream=compute stage=0 layers=1-2 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m2.t12-32.l1.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l1.attn.m2.t12-32 bytes=2560
op B.s0.m2.t12-32.l0.mlp.r0 BWD dev=4 stream=compute stage=0 layers=0-1 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m2.t12-32.l0.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l0.mlp.m2.t12-32 bytes=2560
op B.s0.m2.t12-32.l0.attn.r0 BWD dev=4 stream=compute stage=0 layers=0-1 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m2.t12-32.l0.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l0.attn.m2.t12-32 bytes=2560
op F.s0.m3.t12-32.l0.attn.r0 FWD dev=4 stream=compute stage=0 layers=0-1 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m3.t12-32.l0.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l0.attn.m3.t12-32 bytes=2560
op F.s0.m3.t12-32.l0.mlp.r0 FWD dev=4 stream=compute stage=0 layers=0-1 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m3.t12-32.l0.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l0.mlp.m3.t12-32 bytes=2560
op F.s0.m3.t12-32.l1.attn.r0 FWD dev=4 stream=compute stage=0 layers=1-2 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m3.t12-32.l1.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l1.attn.m3.t12-32 bytes=2560
op F.s0.m3.t12-32.l1.mlp.r0 FWD dev=4 stream=compute stage=0 layers=1-2 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m3.t12-32.l1.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l1.mlp.m3.t12-32 bytes=2560
op SF.s0.m3.t12-32.r0 SEND dev=4 stream=send stage=0 mb=3 rows=1 tokens=12-32 peer=6 tensor=act.l2.m3.t12-32.r0 bytes=2560 after=ARF.s0.m3.t12-32.l1.mlp.r0
op RB.s0.m2.t0-12.r0 RECV dev=4 stream=recv stage=0 mb=2 rows=1 tokens=0-12 peer=6 tensor=grad.l2.m2.t0-12.r0 bytes=1536
op B.s0.m2.t0-12.l1.mlp.r0 BWD dev=4 stream=compute stage=0 layers=1-2 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s0 after=RB.s0.m2.t0-12.r0
op ARB.s0.m2.t0-12.l1.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l1.mlp.m2.t0-12 bytes=1536
op B.s0.m2.t0-12.l1.attn.r0 BWD dev=4 stream=compute stage=0 layers=1-2 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m2.t0-12.l1.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l1.attn.m2.t0-12 bytes=1536
op B.s0.m2.t0-12.l0.mlp.r0 BWD dev=4 stream=compute stage=0 layers=0-1 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m2.t0-12.l0.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l0.mlp.m2.t0-12 bytes=1536
op B.s0.m2.t0-12.l0.attn.r0 BWD dev=4 stream=compute stage=0 layers=0-1 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m2.t0-12.l0.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l0.attn.m2.t0-12 bytes=1536
op RB.s0.m3.t12-32.r0 RECV dev=4 stream=recv stage=0 mb=3 rows=1 tokens=12-32 peer=6 tensor=grad.l2.m3.t12-32.r0 bytes=2560
op B.s0.m3.t12-32.l1.mlp.r0 BWD dev=4 stream=compute stage=0 layers=1-2 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s0 after=RB.s0.m3.t12-32.r0
op ARB.s0.m3.t12-32.l1.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l1.mlp.m3.t12-32 bytes=2560
op B.s0.m3.t12-32.l1.attn.r0 BWD dev=4 stream=compute stage=0 layers=1-2 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m3.t12-32.l1.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l1.attn.m3.t12-32 bytes=2560
op B.s0.m3.t12-32.l0.mlp.r0 BWD dev=4 stream=compute stage=0 layers=0-1 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m3.t12-32.l0.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l0.mlp.m3.t12-32 bytes=2560
op B.s0.m3.t12-32.l0.attn.r0 BWD dev=4 stream=compute stage=0 layers=0-1 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m3.t12-32.l0.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l0.attn.m3.t12-32 bytes=2560
op RB.s0.m3.t0-12.r0 RECV dev=4 stream=recv stage=0 mb=3 rows=1 tokens=0-12 peer=6 tensor=grad.l2.m3.t0-12.r0 bytes=1536
op B.s0.m3.t0-12.l1.mlp.r0 BWD dev=4 stream=compute stage=0 layers=1-2 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s0 after=RB.s0.m3.t0-12.r0
op ARB.s0.m3.t0-12.l1.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l1.mlp.m3.t0-12 bytes=1536
op B.s0.m3.t0-12.l1.attn.r0 BWD dev=4 stream=compute stage=0 layers=1-2 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m3.t0-12.l1.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l1.attn.m3.t0-12 bytes=1536
op B.s0.m3.t0-12.l0.mlp.r0 BWD dev=4 stream=compute stage=0 layers=0-1 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m3.t0-12.l0.mlp.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l0.mlp.m3.t0-12 bytes=1536
op B.s0.m3.t0-12.l0.attn.r0 BWD dev=4 stream=compute stage=0 layers=0-1 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m3.t0-12.l0.attn.r0 ALLREDUCE dev=4 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l0.attn.m3.t0-12 bytes=1536
op BAR.p0.d1.r0 ALLREDUCE dev=4 stream=dp group=replica.d1 tensor=barrier.d1 bytes=4 after=ARB.s0.m3.t0-12.l0.attn.r0
op DP.s0.d1.r0 ALLREDUCE dev=4 stream=dp stage=0 layers=0-2 group=dp.s0.r0 tensor=wgrad.s0.r0 bytes=99968 after=ARB.s0.m3.t0-12.l0.attn.r0,BAR.p0.d1.r0
op OPT.s0.d1.r0 OPTIMIZER dev=4 stream=compute stage=0 layers=0-2 after=DP.s0.d1.r0
# device 5
op F.s0.m2.t0-12.l0.attn.r1 FWD dev=5 stream=compute stage=0 layers=0-1 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m2.t0-12.l0.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l0.attn.m2.t0-12 bytes=1536
op F.s0.m2.t0-12.l0.mlp.r1 FWD dev=5 stream=compute stage=0 layers=0-1 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m2.t0-12.l0.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l0.mlp.m2.t0-12 bytes=1536
op F.s0.m2.t0-12.l1.attn.r1 FWD dev=5 stream=compute stage=0 layers=1-2 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m2.t0-12.l1.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l1.attn.m2.t0-12 bytes=1536
op F.s0.m2.t0-12.l1.mlp.r1 FWD dev=5 stream=compute stage=0 layers=1-2 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m2.t0-12.l1.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l1.mlp.m2.t0-12 bytes=1536
op SF.s0.m2.t0-12.r1 SEND dev=5 stream=send stage=0 mb=2 rows=1 tokens=0-12 peer=7 tensor=act.l2.m2.t0-12.r1 bytes=1536 after=ARF.s0.m2.t0-12.l1.mlp.r1
op F.s0.m2.t12-32.l0.attn.r1 FWD dev=5 stream=compute stage=0 layers=0-1 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m2.t12-32.l0.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l0.attn.m2.t12-32 bytes=2560
op F.s0.m2.t12-32.l0.mlp.r1 FWD dev=5 stream=compute stage=0 layers=0-1 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m2.t12-32.l0.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l0.mlp.m2.t12-32 bytes=2560
op F.s0.m2.t12-32.l1.attn.r1 FWD dev=5 stream=compute stage=0 layers=1-2 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m2.t12-32.l1.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l1.attn.m2.t12-32 bytes=2560
op F.s0.m2.t12-32.l1.mlp.r1 FWD dev=5 stream=compute stage=0 layers=1-2 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m2.t12-32.l1.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l1.mlp.m2.t12-32 bytes=2560
op SF.s0.m2.t12-32.r1 SEND dev=5 stream=send stage=0 mb=2 rows=1 tokens=12-32 peer=7 tensor=act.l2.m2.t12-32.r1 bytes=2560 after=ARF.s0.m2.t12-32.l1.mlp.r1
op F.s0.m3.t0-12.l0.attn.r1 FWD dev=5 stream=compute stage=0 layers=0-1 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m3.t0-12.l0.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l0.attn.m3.t0-12 bytes=1536
op F.s0.m3.t0-12.l0.mlp.r1 FWD dev=5 stream=compute stage=0 layers=0-1 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m3.t0-12.l0.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l0.mlp.m3.t0-12 bytes=1536
op F.s0.m3.t0-12.l1.attn.r1 FWD dev=5 stream=compute stage=0 layers=1-2 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m3.t0-12.l1.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l1.attn.m3.t0-12 bytes=1536
op F.s0.m3.t0-12.l1.mlp.r1 FWD dev=5 stream=compute stage=0 layers=1-2 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARF.s0.m3.t0-12.l1.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpf.l1.mlp.m3.t0-12 bytes=1536
op SF.s0.m3.t0-12.r1 SEND dev=5 stream=send stage=0 mb=3 rows=1 tokens=0-12 peer=7 tensor=act.l2.m3.t0-12.r1 bytes=1536 after=ARF.s0.m3.t0-12.l1.mlp.r1
op RB.s0.m2.t12-32.r1 RECV dev=5 stream=recv stage=0 mb=2 rows=1 tokens=12-32 peer=7 tensor=grad.l2.m2.t12-32.r1 bytes=2560
op B.s0.m2.t12-32.l1.mlp.r1 BWD dev=5 stream=compute stage=0 layers=1-2 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s0 after=RB.s0.m2.t12-32.r1
op ARB.s0.m2.t12-32.l1.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l1.mlp.m2.t12-32 bytes=2560
op B.s0.m2.t12-32.l1.attn.r1 BWD dev=5 stream=compute stage=0 layers=1-2 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m2.t12-32.l1.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l1.attn.m2.t12-32 bytes=2560
op B.s0.m2.t12-32.l0.mlp.r1 BWD dev=5 stream=compute stage=0 layers=0-1 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m2.t12-32.l0.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l0.mlp.m2.t12-32 bytes=2560
op B.s0.m2.t12-32.l0.attn.r1 BWD dev=5 stream=compute stage=0 layers=0-1 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m2.t12-32.l0.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l0.attn.m2.t12-32 bytes=2560
op F.s0.m3.t12-32.l0.attn.r1 FWD dev=5 stream=compute stage=0 layers=0-1 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m3.t12-32.l0.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l0.attn.m3.t12-32 bytes=2560
op F.s0.m3.t12-32.l0.mlp.r1 FWD dev=5 stream=compute stage=0 layers=0-1 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m3.t12-32.l0.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l0.mlp.m3.t12-32 bytes=2560
op F.s0.m3.t12-32.l1.attn.r1 FWD dev=5 stream=compute stage=0 layers=1-2 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m3.t12-32.l1.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l1.attn.m3.t12-32 bytes=2560
op F.s0.m3.t12-32.l1.mlp.r1 FWD dev=5 stream=compute stage=0 layers=1-2 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARF.s0.m3.t12-32.l1.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpf.l1.mlp.m3.t12-32 bytes=2560
op SF.s0.m3.t12-32.r1 SEND dev=5 stream=send stage=0 mb=3 rows=1 tokens=12-32 peer=7 tensor=act.l2.m3.t12-32.r1 bytes=2560 after=ARF.s0.m3.t12-32.l1.mlp.r1
op RB.s0.m2.t0-12.r1 RECV dev=5 stream=recv stage=0 mb=2 rows=1 tokens=0-12 peer=7 tensor=grad.l2.m2.t0-12.r1 bytes=1536
op B.s0.m2.t0-12.l1.mlp.r1 BWD dev=5 stream=compute stage=0 layers=1-2 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s0 after=RB.s0.m2.t0-12.r1
op ARB.s0.m2.t0-12.l1.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l1.mlp.m2.t0-12 bytes=1536
op B.s0.m2.t0-12.l1.attn.r1 BWD dev=5 stream=compute stage=0 layers=1-2 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m2.t0-12.l1.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l1.attn.m2.t0-12 bytes=1536
op B.s0.m2.t0-12.l0.mlp.r1 BWD dev=5 stream=compute stage=0 layers=0-1 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m2.t0-12.l0.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l0.mlp.m2.t0-12 bytes=1536
op B.s0.m2.t0-12.l0.attn.r1 BWD dev=5 stream=compute stage=0 layers=0-1 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m2.t0-12.l0.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=2 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l0.attn.m2.t0-12 bytes=1536
op RB.s0.m3.t12-32.r1 RECV dev=5 stream=recv stage=0 mb=3 rows=1 tokens=12-32 peer=7 tensor=grad.l2.m3.t12-32.r1 bytes=2560
op B.s0.m3.t12-32.l1.mlp.r1 BWD dev=5 stream=compute stage=0 layers=1-2 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s0 after=RB.s0.m3.t12-32.r1
op ARB.s0.m3.t12-32.l1.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l1.mlp.m3.t12-32 bytes=2560
op B.s0.m3.t12-32.l1.attn.r1 BWD dev=5 stream=compute stage=0 layers=1-2 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m3.t12-32.l1.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l1.attn.m3.t12-32 bytes=2560
op B.s0.m3.t12-32.l0.mlp.r1 BWD dev=5 stream=compute stage=0 layers=0-1 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m3.t12-32.l0.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l0.mlp.m3.t12-32 bytes=2560
op B.s0.m3.t12-32.l0.attn.r1 BWD dev=5 stream=compute stage=0 layers=0-1 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s0
op ARB.s0.m3.t12-32.l0.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=12-32 group=tp.d1.s0 tensor=tpb.l0.attn.m3.t12-32 bytes=2560
op RB.s0.m3.t0-12.r1 RECV dev=5 stream=recv stage=0 mb=3 rows=1 tokens=0-12 peer=7 tensor=grad.l2.m3.t0-12.r1 bytes=1536
op B.s0.m3.t0-12.l1.mlp.r1 BWD dev=5 stream=compute stage=0 layers=1-2 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s0 after=RB.s0.m3.t0-12.r1
op ARB.s0.m3.t0-12.l1.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l1.mlp.m3.t0-12 bytes=1536
op B.s0.m3.t0-12.l1.attn.r1 BWD dev=5 stream=compute stage=0 layers=1-2 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m3.t0-12.l1.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=1-2 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l1.attn.m3.t0-12 bytes=1536
op B.s0.m3.t0-12.l0.mlp.r1 BWD dev=5 stream=compute stage=0 layers=0-1 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m3.t0-12.l0.mlp.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l0.mlp.m3.t0-12 bytes=1536
op B.s0.m3.t0-12.l0.attn.r1 BWD dev=5 stream=compute stage=0 layers=0-1 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s0
op ARB.s0.m3.t0-12.l0.attn.r1 ALLREDUCE dev=5 stream=compute stage=0 layers=0-1 mb=3 rows=1 tokens=0-12 group=tp.d1.s0 tensor=tpb.l0.attn.m3.t0-12 bytes=1536
op BAR.p0.d1.r1 ALLREDUCE dev=5 stream=dp group=replica.d1 tensor=barrier.d1 bytes=4 after=ARB.s0.m3.t0-12.l0.attn.r1
op DP.s0.d1.r1 ALLREDUCE dev=5 stream=dp stage=0 layers=0-2 group=dp.s0.r1 tensor=wgrad.s0.r1 bytes=99968 after=ARB.s0.m3.t0-12.l0.attn.r1,BAR.p0.d1.r1
op OPT.s0.d1.r1 OPTIMIZER dev=5 stream=compute stage=0 layers=0-2 after=DP.s0.d1.r1
# device 6
op RF.s1.m2.t0-12.r0 RECV dev=6 stream=recv stage=1 mb=2 rows=1 tokens=0-12 peer=4 tensor=act.l2.m2.t0-12.r0 bytes=1536
op F.s1.m2.t0-12.l2.attn.r0 FWD dev=6 stream=compute stage=1 layers=2-3 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s1 after=RF.s1.m2.t0-12.r0
op ARF.s1.m2.t0-12.l2.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l2.attn.m2.t0-12 bytes=1536
op F.s1.m2.t0-12.l2.mlp.r0 FWD dev=6 stream=compute stage=1 layers=2-3 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m2.t0-12.l2.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l2.mlp.m2.t0-12 bytes=1536
op F.s1.m2.t0-12.l3.attn.r0 FWD dev=6 stream=compute stage=1 layers=3-4 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m2.t0-12.l3.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l3.attn.m2.t0-12 bytes=1536
op F.s1.m2.t0-12.l3.mlp.r0 FWD dev=6 stream=compute stage=1 layers=3-4 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m2.t0-12.l3.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l3.mlp.m2.t0-12 bytes=1536
op RF.s1.m2.t12-32.r0 RECV dev=6 stream=recv stage=1 mb=2 rows=1 tokens=12-32 peer=4 tensor=act.l2.m2.t12-32.r0 bytes=2560
op F.s1.m2.t12-32.l2.attn.r0 FWD dev=6 stream=compute stage=1 layers=2-3 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s1 after=RF.s1.m2.t12-32.r0
op ARF.s1.m2.t12-32.l2.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l2.attn.m2.t12-32 bytes=2560
op F.s1.m2.t12-32.l2.mlp.r0 FWD dev=6 stream=compute stage=1 layers=2-3 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m2.t12-32.l2.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l2.mlp.m2.t12-32 bytes=2560
op F.s1.m2.t12-32.l3.attn.r0 FWD dev=6 stream=compute stage=1 layers=3-4 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m2.t12-32.l3.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l3.attn.m2.t12-32 bytes=2560
op F.s1.m2.t12-32.l3.mlp.r0 FWD dev=6 stream=compute stage=1 layers=3-4 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m2.t12-32.l3.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l3.mlp.m2.t12-32 bytes=2560
op B.s1.m2.t12-32.l3.mlp.r0 BWD dev=6 stream=compute stage=1 layers=3-4 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m2.t12-32.l3.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l3.mlp.m2.t12-32 bytes=2560
op B.s1.m2.t12-32.l3.attn.r0 BWD dev=6 stream=compute stage=1 layers=3-4 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m2.t12-32.l3.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l3.attn.m2.t12-32 bytes=2560
op B.s1.m2.t12-32.l2.mlp.r0 BWD dev=6 stream=compute stage=1 layers=2-3 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m2.t12-32.l2.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l2.mlp.m2.t12-32 bytes=2560
op B.s1.m2.t12-32.l2.attn.r0 BWD dev=6 stream=compute stage=1 layers=2-3 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m2.t12-32.l2.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l2.attn.m2.t12-32 bytes=2560
op SB.s1.m2.t12-32.r0 SEND dev=6 stream=send stage=1 mb=2 rows=1 tokens=12-32 peer=4 tensor=grad.l2.m2.t12-32.r0 bytes=2560 after=ARB.s1.m2.t12-32.l2.attn.r0
op RF.s1.m3.t0-12.r0 RECV dev=6 stream=recv stage=1 mb=3 rows=1 tokens=0-12 peer=4 tensor=act.l2.m3.t0-12.r0 bytes=1536
op F.s1.m3.t0-12.l2.attn.r0 FWD dev=6 stream=compute stage=1 layers=2-3 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s1 after=RF.s1.m3.t0-12.r0
op ARF.s1.m3.t0-12.l2.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l2.attn.m3.t0-12 bytes=1536
op F.s1.m3.t0-12.l2.mlp.r0 FWD dev=6 stream=compute stage=1 layers=2-3 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m3.t0-12.l2.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l2.mlp.m3.t0-12 bytes=1536
op F.s1.m3.t0-12.l3.attn.r0 FWD dev=6 stream=compute stage=1 layers=3-4 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m3.t0-12.l3.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l3.attn.m3.t0-12 bytes=1536
op F.s1.m3.t0-12.l3.mlp.r0 FWD dev=6 stream=compute stage=1 layers=3-4 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m3.t0-12.l3.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l3.mlp.m3.t0-12 bytes=1536
op B.s1.m2.t0-12.l3.mlp.r0 BWD dev=6 stream=compute stage=1 layers=3-4 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m2.t0-12.l3.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l3.mlp.m2.t0-12 bytes=1536
op B.s1.m2.t0-12.l3.attn.r0 BWD dev=6 stream=compute stage=1 layers=3-4 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m2.t0-12.l3.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l3.attn.m2.t0-12 bytes=1536
op B.s1.m2.t0-12.l2.mlp.r0 BWD dev=6 stream=compute stage=1 layers=2-3 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m2.t0-12.l2.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l2.mlp.m2.t0-12 bytes=1536
op B.s1.m2.t0-12.l2.attn.r0 BWD dev=6 stream=compute stage=1 layers=2-3 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m2.t0-12.l2.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l2.attn.m2.t0-12 bytes=1536
op SB.s1.m2.t0-12.r0 SEND dev=6 stream=send stage=1 mb=2 rows=1 tokens=0-12 peer=4 tensor=grad.l2.m2.t0-12.r0 bytes=1536 after=ARB.s1.m2.t0-12.l2.attn.r0
op RF.s1.m3.t12-32.r0 RECV dev=6 stream=recv stage=1 mb=3 rows=1 tokens=12-32 peer=4 tensor=act.l2.m3.t12-32.r0 bytes=2560
op F.s1.m3.t12-32.l2.attn.r0 FWD dev=6 stream=compute stage=1 layers=2-3 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s1 after=RF.s1.m3.t12-32.r0
op ARF.s1.m3.t12-32.l2.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l2.attn.m3.t12-32 bytes=2560
op F.s1.m3.t12-32.l2.mlp.r0 FWD dev=6 stream=compute stage=1 layers=2-3 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m3.t12-32.l2.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l2.mlp.m3.t12-32 bytes=2560
op F.s1.m3.t12-32.l3.attn.r0 FWD dev=6 stream=compute stage=1 layers=3-4 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m3.t12-32.l3.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l3.attn.m3.t12-32 bytes=2560
op F.s1.m3.t12-32.l3.mlp.r0 FWD dev=6 stream=compute stage=1 layers=3-4 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m3.t12-32.l3.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l3.mlp.m3.t12-32 bytes=2560
op B.s1.m3.t12-32.l3.mlp.r0 BWD dev=6 stream=compute stage=1 layers=3-4 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m3.t12-32.l3.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l3.mlp.m3.t12-32 bytes=2560
op B.s1.m3.t12-32.l3.attn.r0 BWD dev=6 stream=compute stage=1 layers=3-4 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m3.t12-32.l3.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l3.attn.m3.t12-32 bytes=2560
op B.s1.m3.t12-32.l2.mlp.r0 BWD dev=6 stream=compute stage=1 layers=2-3 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m3.t12-32.l2.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l2.mlp.m3.t12-32 bytes=2560
op B.s1.m3.t12-32.l2.attn.r0 BWD dev=6 stream=compute stage=1 layers=2-3 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m3.t12-32.l2.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l2.attn.m3.t12-32 bytes=2560
op SB.s1.m3.t12-32.r0 SEND dev=6 stream=send stage=1 mb=3 rows=1 tokens=12-32 peer=4 tensor=grad.l2.m3.t12-32.r0 bytes=2560 after=ARB.s1.m3.t12-32.l2.attn.r0
op B.s1.m3.t0-12.l3.mlp.r0 BWD dev=6 stream=compute stage=1 layers=3-4 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m3.t0-12.l3.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l3.mlp.m3.t0-12 bytes=1536
op B.s1.m3.t0-12.l3.attn.r0 BWD dev=6 stream=compute stage=1 layers=3-4 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m3.t0-12.l3.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l3.attn.m3.t0-12 bytes=1536
op B.s1.m3.t0-12.l2.mlp.r0 BWD dev=6 stream=compute stage=1 layers=2-3 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m3.t0-12.l2.mlp.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l2.mlp.m3.t0-12 bytes=1536
op B.s1.m3.t0-12.l2.attn.r0 BWD dev=6 stream=compute stage=1 layers=2-3 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m3.t0-12.l2.attn.r0 ALLREDUCE dev=6 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l2.attn.m3.t0-12 bytes=1536
op SB.s1.m3.t0-12.r0 SEND dev=6 stream=send stage=1 mb=3 rows=1 tokens=0-12 peer=4 tensor=grad.l2.m3.t0-12.r0 bytes=1536 after=ARB.s1.m3.t0-12.l2.attn.r0
op BAR.p1.d1.r0 ALLREDUCE dev=6 stream=dp group=replica.d1 tensor=barrier.d1 bytes=4 after=ARB.s1.m3.t0-12.l2.attn.r0
op DP.s1.d1.r0 ALLREDUCE dev=6 stream=dp stage=1 layers=2-4 group=dp.s1.r0 tensor=wgrad.s1.r0 bytes=99968 after=ARB.s1.m3.t0-12.l2.attn.r0,BAR.p1.d1.r0
op OPT.s1.d1.r0 OPTIMIZER dev=6 stream=compute stage=1 layers=2-4 after=DP.s1.d1.r0
# device 7
op RF.s1.m2.t0-12.r1 RECV dev=7 stream=recv stage=1 mb=2 rows=1 tokens=0-12 peer=5 tensor=act.l2.m2.t0-12.r1 bytes=1536
op F.s1.m2.t0-12.l2.attn.r1 FWD dev=7 stream=compute stage=1 layers=2-3 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s1 after=RF.s1.m2.t0-12.r1
op ARF.s1.m2.t0-12.l2.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l2.attn.m2.t0-12 bytes=1536
op F.s1.m2.t0-12.l2.mlp.r1 FWD dev=7 stream=compute stage=1 layers=2-3 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m2.t0-12.l2.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l2.mlp.m2.t0-12 bytes=1536
op F.s1.m2.t0-12.l3.attn.r1 FWD dev=7 stream=compute stage=1 layers=3-4 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m2.t0-12.l3.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l3.attn.m2.t0-12 bytes=1536
op F.s1.m2.t0-12.l3.mlp.r1 FWD dev=7 stream=compute stage=1 layers=3-4 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m2.t0-12.l3.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l3.mlp.m2.t0-12 bytes=1536
op RF.s1.m2.t12-32.r1 RECV dev=7 stream=recv stage=1 mb=2 rows=1 tokens=12-32 peer=5 tensor=act.l2.m2.t12-32.r1 bytes=2560
op F.s1.m2.t12-32.l2.attn.r1 FWD dev=7 stream=compute stage=1 layers=2-3 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s1 after=RF.s1.m2.t12-32.r1
op ARF.s1.m2.t12-32.l2.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l2.attn.m2.t12-32 bytes=2560
op F.s1.m2.t12-32.l2.mlp.r1 FWD dev=7 stream=compute stage=1 layers=2-3 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m2.t12-32.l2.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l2.mlp.m2.t12-32 bytes=2560
op F.s1.m2.t12-32.l3.attn.r1 FWD dev=7 stream=compute stage=1 layers=3-4 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m2.t12-32.l3.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l3.attn.m2.t12-32 bytes=2560
op F.s1.m2.t12-32.l3.mlp.r1 FWD dev=7 stream=compute stage=1 layers=3-4 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m2.t12-32.l3.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l3.mlp.m2.t12-32 bytes=2560
op B.s1.m2.t12-32.l3.mlp.r1 BWD dev=7 stream=compute stage=1 layers=3-4 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m2.t12-32.l3.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l3.mlp.m2.t12-32 bytes=2560
op B.s1.m2.t12-32.l3.attn.r1 BWD dev=7 stream=compute stage=1 layers=3-4 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m2.t12-32.l3.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l3.attn.m2.t12-32 bytes=2560
op B.s1.m2.t12-32.l2.mlp.r1 BWD dev=7 stream=compute stage=1 layers=2-3 part=mlp mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m2.t12-32.l2.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l2.mlp.m2.t12-32 bytes=2560
op B.s1.m2.t12-32.l2.attn.r1 BWD dev=7 stream=compute stage=1 layers=2-3 part=attn mb=2 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m2.t12-32.l2.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l2.attn.m2.t12-32 bytes=2560
op SB.s1.m2.t12-32.r1 SEND dev=7 stream=send stage=1 mb=2 rows=1 tokens=12-32 peer=5 tensor=grad.l2.m2.t12-32.r1 bytes=2560 after=ARB.s1.m2.t12-32.l2.attn.r1
op RF.s1.m3.t0-12.r1 RECV dev=7 stream=recv stage=1 mb=3 rows=1 tokens=0-12 peer=5 tensor=act.l2.m3.t0-12.r1 bytes=1536
op F.s1.m3.t0-12.l2.attn.r1 FWD dev=7 stream=compute stage=1 layers=2-3 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s1 after=RF.s1.m3.t0-12.r1
op ARF.s1.m3.t0-12.l2.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l2.attn.m3.t0-12 bytes=1536
op F.s1.m3.t0-12.l2.mlp.r1 FWD dev=7 stream=compute stage=1 layers=2-3 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m3.t0-12.l2.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l2.mlp.m3.t0-12 bytes=1536
op F.s1.m3.t0-12.l3.attn.r1 FWD dev=7 stream=compute stage=1 layers=3-4 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m3.t0-12.l3.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l3.attn.m3.t0-12 bytes=1536
op F.s1.m3.t0-12.l3.mlp.r1 FWD dev=7 stream=compute stage=1 layers=3-4 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARF.s1.m3.t0-12.l3.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpf.l3.mlp.m3.t0-12 bytes=1536
op B.s1.m2.t0-12.l3.mlp.r1 BWD dev=7 stream=compute stage=1 layers=3-4 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m2.t0-12.l3.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l3.mlp.m2.t0-12 bytes=1536
op B.s1.m2.t0-12.l3.attn.r1 BWD dev=7 stream=compute stage=1 layers=3-4 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m2.t0-12.l3.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l3.attn.m2.t0-12 bytes=1536
op B.s1.m2.t0-12.l2.mlp.r1 BWD dev=7 stream=compute stage=1 layers=2-3 part=mlp mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m2.t0-12.l2.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l2.mlp.m2.t0-12 bytes=1536
op B.s1.m2.t0-12.l2.attn.r1 BWD dev=7 stream=compute stage=1 layers=2-3 part=attn mb=2 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m2.t0-12.l2.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=2 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l2.attn.m2.t0-12 bytes=1536
op SB.s1.m2.t0-12.r1 SEND dev=7 stream=send stage=1 mb=2 rows=1 tokens=0-12 peer=5 tensor=grad.l2.m2.t0-12.r1 bytes=1536 after=ARB.s1.m2.t0-12.l2.attn.r1
op RF.s1.m3.t12-32.r1 RECV dev=7 stream=recv stage=1 mb=3 rows=1 tokens=12-32 peer=5 tensor=act.l2.m3.t12-32.r1 bytes=2560
op F.s1.m3.t12-32.l2.attn.r1 FWD dev=7 stream=compute stage=1 layers=2-3 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s1 after=RF.s1.m3.t12-32.r1
op ARF.s1.m3.t12-32.l2.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l2.attn.m3.t12-32 bytes=2560
op F.s1.m3.t12-32.l2.mlp.r1 FWD dev=7 stream=compute stage=1 layers=2-3 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m3.t12-32.l2.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l2.mlp.m3.t12-32 bytes=2560
op F.s1.m3.t12-32.l3.attn.r1 FWD dev=7 stream=compute stage=1 layers=3-4 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m3.t12-32.l3.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l3.attn.m3.t12-32 bytes=2560
op F.s1.m3.t12-32.l3.mlp.r1 FWD dev=7 stream=compute stage=1 layers=3-4 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARF.s1.m3.t12-32.l3.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpf.l3.mlp.m3.t12-32 bytes=2560
op B.s1.m3.t12-32.l3.mlp.r1 BWD dev=7 stream=compute stage=1 layers=3-4 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m3.t12-32.l3.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l3.mlp.m3.t12-32 bytes=2560
op B.s1.m3.t12-32.l3.attn.r1 BWD dev=7 stream=compute stage=1 layers=3-4 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m3.t12-32.l3.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l3.attn.m3.t12-32 bytes=2560
op B.s1.m3.t12-32.l2.mlp.r1 BWD dev=7 stream=compute stage=1 layers=2-3 part=mlp mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m3.t12-32.l2.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l2.mlp.m3.t12-32 bytes=2560
op B.s1.m3.t12-32.l2.attn.r1 BWD dev=7 stream=compute stage=1 layers=2-3 part=attn mb=3 rows=1 tokens=12-32 group=tp.d1.s1
op ARB.s1.m3.t12-32.l2.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=12-32 group=tp.d1.s1 tensor=tpb.l2.attn.m3.t12-32 bytes=2560
op SB.s1.m3.t12-32.r1 SEND dev=7 stream=send stage=1 mb=3 rows=1 tokens=12-32 peer=5 tensor=grad.l2.m3.t12-32.r1 bytes=2560 after=ARB.s1.m3.t12-32.l2.attn.r1
op B.s1.m3.t0-12.l3.mlp.r1 BWD dev=7 stream=compute stage=1 layers=3-4 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m3.t0-12.l3.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l3.mlp.m3.t0-12 bytes=1536
op B.s1.m3.t0-12.l3.attn.r1 BWD dev=7 stream=compute stage=1 layers=3-4 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m3.t0-12.l3.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=3-4 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l3.attn.m3.t0-12 bytes=1536
op B.s1.m3.t0-12.l2.mlp.r1 BWD dev=7 stream=compute stage=1 layers=2-3 part=mlp mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m3.t0-12.l2.mlp.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l2.mlp.m3.t0-12 bytes=1536
op B.s1.m3.t0-12.l2.attn.r1 BWD dev=7 stream=compute stage=1 layers=2-3 part=attn mb=3 rows=1 tokens=0-12 group=tp.d1.s1
op ARB.s1.m3.t0-12.l2.attn.r1 ALLREDUCE dev=7 stream=compute stage=1 layers=2-3 mb=3 rows=1 tokens=0-12 group=tp.d1.s1 tensor=tpb.l2.attn.m3.t0-12 bytes=1536
op SB.s1.m3.t0-12.r1 SEND dev=7 stream=send stage=1 mb=3 rows=1 tokens=0-12 peer=5 tensor=grad.l2.m3.t0-12.r1 bytes=1536 after=ARB.s1.m3.t0-12.l2.attn.r1
op BAR.p1.d1.r1 ALLREDUCE dev=7 stream=dp group=replica.d1 tensor=barrier.d1 bytes=4 after=ARB.s1.m3.t0-12.l2.attn.r1
op DP.s1.d1.r1 ALLREDUCE dev=7 stream=dp stage=1 layers=2-4 group=dp.s1.r1 tensor=wgrad.s1.r1 bytes=99968 after=ARB.s1.m3.t0-12.l2.attn.r1,BAR.p1.d1.r1
op OPT.s1.d1.r1 OPTIMIZER dev=7 stream=compute stage=1 layers=2-4 after=DP.s1.d1.r1
